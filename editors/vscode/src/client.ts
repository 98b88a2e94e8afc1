/** The language client: how the server is started and what it is told. */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import {
  ConfigurationParams,
  DynamicFeature,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  StaticFeature,
} from "vscode-languageclient/node";
import { CLIENT_OWNED_COMMANDS } from "./protocol";
import { ServerLaunch, serverLaunch, serverSettings } from "./settings";

/**
 * A LanguageClient that leaves the commands in CLIENT_OWNED_COMMANDS to the
 * extension. Without this, the client registers every command the server
 * lists in executeCommandProvider, and VS Code rejects the second
 * registration of `gpa.profile` (ours carries the trust check and progress).
 */
class GpaLanguageClient extends LanguageClient {
  override registerFeature(feature: StaticFeature | DynamicFeature<any>): void {
    const dynamic = feature as DynamicFeature<any> & { register?: (data: any) => void };
    if ("registrationType" in dynamic && dynamic.registrationType?.method === "workspace/executeCommand" && dynamic.register) {
      const register = dynamic.register.bind(dynamic);
      dynamic.register = (data: any) => {
        const commands: string[] = data?.registerOptions?.commands ?? [];
        register({ ...data, registerOptions: { ...data.registerOptions, commands: commands.filter((c) => !CLIENT_OWNED_COMMANDS.has(c)) } });
      };
    }
    super.registerFeature(feature);
  }
}

export function settingsSource(scope?: vscode.Uri) {
  const cfg = vscode.workspace.getConfiguration("gpa", scope ?? null);
  return { inspect: (key: string) => cfg.inspect(key) };
}

/** The bundled server of the installed .vsix (bundled/tool/lsp_server.py), when it has bundled/libs. */
export function bundledServer(extensionPath: string): string | undefined {
  const script = path.join(extensionPath, "bundled", "tool", "lsp_server.py");
  return fs.existsSync(script) && fs.existsSync(path.join(extensionPath, "bundled", "libs")) ? script : undefined;
}

/** The interpreter the Python extension (ms-python.python) selected for the workspace, if it is installed. */
export async function pythonFromExtension(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const resolved = await envs.resolveEnvironment(envs.getActiveEnvironmentPath(resource));
      const exe = resolved?.executable?.uri?.fsPath;
      if (typeof exe === "string" && exe) {
        return exe;
      }
    }
    const details = api?.settings?.getExecutionDetails?.(resource); // the older API
    const cmd = details?.execCommand;
    return Array.isArray(cmd) && typeof cmd[0] === "string" && cmd[0] ? cmd[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Restart the server when the Python extension's interpreter changes (when it chose ours). */
export async function onPythonChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  try {
    const api: any = ext ? (ext.isActive ? ext.exports : await ext.activate()) : undefined;
    return api?.environments?.onDidChangeActiveEnvironmentPath?.(() => listener());
  } catch {
    return undefined;
  }
}

export async function currentLaunch(extensionPath: string): Promise<ServerLaunch> {
  const trusted = vscode.workspace.isTrusted;
  return serverLaunch(settingsSource(), trusted, os.homedir(), {
    bundledServer: bundledServer(extensionPath),
    pythonFromExtension: trusted ? await pythonFromExtension() : undefined,
  });
}

export function initializationOptions(): { trusted: boolean; settings: Record<string, unknown> } {
  const scope = vscode.workspace.workspaceFolders?.[0]?.uri;
  return { trusted: vscode.workspace.isTrusted, settings: serverSettings(settingsSource(scope), vscode.workspace.isTrusted) };
}

export function createClient(launch: ServerLaunch, output: vscode.LogOutputChannel, initOptions: object): LanguageClient {
  // No `transport`: with TransportKind.stdio the client appends `--stdio`, which is not ours to add to a user's command.
  const executable = {
    command: launch.command,
    args: launch.args,
    ...(launch.env ? { options: { env: { ...process.env, ...launch.env } } } : {}),
  };
  const serverOptions: ServerOptions = { run: executable, debug: executable };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "cuda-cpp" }],
    outputChannel: output,
    initializationOptions: initOptions,
    synchronize: {
      fileEvents: [
        vscode.workspace.createFileSystemWatcher("**/gpa.toml"),
        vscode.workspace.createFileSystemWatcher("**/pyproject.toml"),
        vscode.workspace.createFileSystemWatcher("**/*.gpabundle"),
      ],
    },
    middleware: {
      workspace: {
        // Answer the `gpa` section ourselves: only values the user set, and
        // restricted ones from user settings alone in an untrusted workspace.
        configuration: async (params: ConfigurationParams, token, next) => {
          const isGpa = (s?: string) => s === "gpa";
          if (!params.items.some((i) => isGpa(i.section))) {
            return next(params, token);
          }
          const others = params.items.filter((i) => !isGpa(i.section));
          const answered = others.length ? await next({ items: others }, token) : [];
          if (answered instanceof Error || !Array.isArray(answered)) {
            return answered;
          }
          let k = 0;
          return params.items.map((item) =>
            isGpa(item.section)
              ? serverSettings(settingsSource(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined), vscode.workspace.isTrusted)
              : answered[k++],
          );
        },
      },
    },
  };
  return new GpaLanguageClient("gpa", "GPA language server", serverOptions, clientOptions);
}
