/**
 * gpa-lsp for VS Code: starts the language server, feeds the status bar and
 * the line heat from the server's notifications, and owns the commands.
 * The analysis itself lives in the server; this file is wiring.
 */
import * as vscode from "vscode";
import { LanguageClient, State } from "vscode-languageclient/node";
import { createClient, currentLaunch, initializationOptions, onPythonChange } from "./client";
import { REPORT_SCHEME, registerCommands, ReportDocuments } from "./commands";
import { LineHeat } from "./lineHeat";
import { LineHeatEntry, LineHeatNotification, StatusNotification, StatusParams } from "./protocol";
import { ServerLaunch } from "./settings";
import { StatusBar, UNTRUSTED_TOOLTIP } from "./status";
import { linkTomlSchemas } from "./tomlSchema";

/** What the extension exports (`vscode.extensions.getExtension("gpa-lsp.gpa-lsp").exports`), for tests and other extensions. */
export interface GpaApi {
  readonly trusted: boolean;
  /** Resolves once the server is running (or rejects with why it is not). */
  ready(): Promise<void>;
  launch(): ServerLaunch | undefined;
  initializationOptions(): unknown;
  status(): StatusParams | undefined;
  statusHistory(): StatusParams[];
  statusBarText(): string;
  lineHeat(uri: string): LineHeatEntry[];
  drawnHeat(uri: string): { line: number; level: number }[];
  notices(): string[];
}

class Extension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private launched: ServerLaunch | undefined;
  private sentOptions: unknown;
  private starting: Promise<void> = Promise.resolve();
  private readonly output = vscode.window.createOutputChannel("GPA", { log: true });
  private readonly status = new StatusBar();
  private readonly heat = new LineHeat(vscode.workspace.getConfiguration("gpa").get<boolean>("lineHeat", true));
  private readonly reports = new ReportDocuments();
  private readonly shownNotices: string[] = [];
  private readonly disposables: vscode.Disposable[] = [];
  private readonly extensionPath: string;

  constructor(context: vscode.ExtensionContext) {
    this.extensionPath = context.extensionPath;
    this.disposables.push(
      this.output,
      this.status,
      this.heat,
      vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this.reports),
      ...registerCommands({ client: () => this.client, notice: (m) => this.notice(m) }, this.reports),
      vscode.commands.registerCommand("gpa.restartServer", () => this.restart("restart requested")),
      vscode.commands.registerCommand("gpa.showOutput", () => this.output.show(true)),
      vscode.commands.registerCommand("gpa.toggleLineHeat", async () => {
        const cfg = vscode.workspace.getConfiguration("gpa");
        await cfg.update("lineHeat", !cfg.get<boolean>("lineHeat", true), vscode.ConfigurationTarget.Global);
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.restart("workspace trusted: restricted settings now apply")),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("gpa.lineHeat")) {
          this.heat.setEnabled(vscode.workspace.getConfiguration("gpa").get<boolean>("lineHeat", true));
        }
        if (e.affectsConfiguration("gpa.server.command") || e.affectsConfiguration("gpa.server.python") || e.affectsConfiguration("gpa.importStrategy")) {
          void this.restart("server setting changed");
        }
      }),
    );
    context.subscriptions.push(this);
    if (!vscode.workspace.isTrusted) {
      this.status.local("untrusted", UNTRUSTED_TOOLTIP);
      this.output.appendLine(`[gpa] ${UNTRUSTED_TOOLTIP}`);
    }
    this.starting = this.start();
    void onPythonChange(() => {
      if (this.launched?.from === "python extension") {
        void this.restart("the Python extension's interpreter changed");
      }
    }).then((d) => d && this.disposables.push(d));
  }

  api(): GpaApi {
    return {
      get trusted() {
        return vscode.workspace.isTrusted;
      },
      ready: () => this.starting,
      launch: () => this.launched,
      initializationOptions: () => this.sentOptions,
      status: () => this.status.current,
      statusHistory: () => [...this.status.history],
      statusBarText: () => this.status.text,
      lineHeat: (uri) => this.heat.lines(uri),
      drawnHeat: (uri) => this.heat.drawn(uri),
      notices: () => [...this.shownNotices],
    };
  }

  private notice(message: string): void {
    this.shownNotices.push(message);
    this.output.appendLine(`[gpa] ${message}`);
  }

  private async start(): Promise<void> {
    const launch = await currentLaunch(this.extensionPath);
    const options = initializationOptions();
    this.launched = launch;
    this.sentOptions = options;
    this.output.appendLine(
      `[gpa] starting the server (${launch.from}${launch.importStrategy ? `, ${launch.importStrategy}` : ""}): ${[launch.command, ...launch.args].join(" ")}`,
    );
    this.output.appendLine(`[gpa] initializationOptions: ${JSON.stringify(options)}`);
    if (vscode.workspace.isTrusted) {
      this.status.local("starting", "starting the GPA language server");
    }
    const client = createClient(launch, this.output, options);
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.status.local("stopped", "the GPA language server stopped (GPA: Restart server)");
      }
    });
    try {
      await client.start();
    } catch (err) {
      const raw = err instanceof Error ? err.message : String(err);
      // The client reports a server that died at start as a disposed connection; say it plainly.
      const why = /connection got disposed|closed/i.test(raw) ? "the server process exited while starting (its error is in GPA: Show output)" : raw;
      const install =
        "install gpa-lsp into that Python (python3 -m pip install /path/to/gpa-lsp: the repository, or the wheel `python3 -m pip wheel --no-deps /path/to/gpa-lsp` builds)";
      const hint =
        launch.from === "gpa.server.command"
          ? "Check the setting gpa.server.command."
          : launch.importStrategy === "useBundled"
            ? "The bundled server needs Python 3.11 or newer (Linux x86_64 for its compiled parts): choose one in the Python extension or set gpa.server.python; or set gpa.importStrategy to fromEnvironment and " + install + "."
            : launch.importStrategy === "fromEnvironment"
              ? "With gpa.importStrategy = fromEnvironment, " + install + ", or set it back to useBundled."
              : "Either " + install + ", or set gpa.server.python / gpa.server.command.";
      this.status.local("error", `the server did not start: ${why}`);
      this.output.appendLine(`[gpa] the server did not start (${[launch.command, ...launch.args].join(" ")}): ${why}`);
      void vscode.window.showErrorMessage(`GPA: the language server did not start: ${why}. ${hint}`, "Show output").then((pick) => {
        if (pick) {
          this.output.show(true);
        }
      });
      throw err;
    }
    if (vscode.workspace.isTrusted && (this.status.current?.state as string) === "starting") {
      this.status.local("idle", "the GPA language server is running; save a CUDA source or run GPA: Profile now");
    }
    this.disposables.push(
      client.onNotification(StatusNotification, (params) => this.status.update(params)),
      client.onNotification(LineHeatNotification, (params) => this.heat.update(params)),
    );
  }

  async restart(reason: string): Promise<void> {
    this.output.appendLine(`[gpa] restarting the server: ${reason}`);
    const old = this.client;
    this.client = undefined;
    this.heat.clear();
    if (old) {
      try {
        await old.stop(5000);
      } catch (err) {
        this.output.appendLine(`[gpa] stopping the old server: ${err}`);
      }
    }
    if (!vscode.workspace.isTrusted) {
      this.status.local("untrusted", UNTRUSTED_TOOLTIP);
    }
    this.starting = this.start();
    await this.starting.catch(() => undefined);
  }

  dispose(): void {
    void this.client?.stop();
    this.disposables.forEach((d) => d.dispose());
  }
}

export function activate(context: vscode.ExtensionContext): GpaApi {
  linkTomlSchemas(context.extension); // first: Even Better TOML reads it when a TOML file opens
  const ext = new Extension(context);
  // Keep activation from failing when the server cannot start: the error is shown, the commands stay.
  ext.api().ready().catch(() => undefined);
  return ext.api();
}

export function deactivate(): void {
  // The Extension object is disposed through context.subscriptions.
}
