/**
 * What the extension tells the server about the `gpa` settings.
 *
 * Only values the user actually set (user, workspace or folder level) are
 * sent: the server layers editor settings over the project's gpa.toml, so
 * sending VS Code's defaults would silently override the project file.
 * Settings that name a command or a path are "restricted": in an untrusted
 * workspace only the user-level value counts, never the folder's own. This
 * mirrors VS Code's restrictedConfigurations but is computed here from
 * `inspect()` so the rule holds whatever the host does, and can be tested.
 */

export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export interface SettingsSource {
  inspect(key: string): Inspected | undefined;
}

/** Keys (below `gpa.`) the server reads, as in docs/protocol.md. */
export const SERVER_KEYS = [
  "build.command",
  "build.nvccFlags",
  "harness.command",
  "harness.cwd",
  "harness.timeout",
  "profile.collector",
  "profile.bundle",
  "profile.kernels",
  "advice.warning",
  "advice.information",
  "server.runOnSave",
  "server.debounceMs",
] as const;

/** Keys only the extension reads (how to start the server, what to draw). */
export const CLIENT_KEYS = ["server.command", "server.python", "importStrategy", "lineHeat"] as const;

/** User-level only, in every workspace: a folder can never trust itself. */
export const USER_ONLY_KEYS = ["trustedWorkspaces"] as const;

/** Every setting that names a command or a path (package.json restrictedConfigurations, without the `gpa.` prefix). */
export const RESTRICTED_KEYS: ReadonlySet<string> = new Set([
  "server.command",
  "server.python",
  "build.command",
  "build.nvccFlags",
  "harness.command",
  "harness.cwd",
  "profile.bundle",
  "trustedWorkspaces",
]);

function isSet(v: unknown): boolean {
  return v !== undefined && v !== null && !(typeof v === "string" && v === "");
}

/** The value of one key the user set, honouring trust; undefined when unset (or not allowed). */
export function effectiveValue(src: SettingsSource, key: string, trusted: boolean): unknown {
  const i = src.inspect(key);
  if (!i) {
    return undefined;
  }
  const userOnly = (USER_ONLY_KEYS as readonly string[]).includes(key) || (!trusted && RESTRICTED_KEYS.has(key));
  const layers = userOnly ? [i.globalValue] : [i.workspaceFolderValue, i.workspaceValue, i.globalValue];
  return layers.find(isSet);
}

/** The nested `gpa` section to send: `{build: {nvccFlags: [...]}, trustedWorkspaces: [...]}`. */
export function serverSettings(src: SettingsSource, trusted: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of [...SERVER_KEYS, ...USER_ONLY_KEYS]) {
    const value = effectiveValue(src, key, trusted);
    if (value === undefined) {
      continue;
    }
    const parts = key.split(".");
    let node = out;
    for (const part of parts.slice(0, -1)) {
      node = (node[part] ??= {}) as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = value;
  }
  return out;
}

/** Where the server's Python packages come from (Microsoft's python-tools template convention). */
export type ImportStrategy = "useBundled" | "fromEnvironment";

export interface ServerLaunch {
  command: string;
  args: string[];
  /** Which setting (or the Python extension) chose the interpreter, for messages. */
  from: "gpa.server.command" | "gpa.server.python" | "python extension" | "default";
  /** Set when the .vsix's bundled server runs: which copy of gpa-lsp and its packages wins. */
  importStrategy?: ImportStrategy;
  /** Added to the server's environment. */
  env?: Record<string, string>;
}

export interface LaunchContext {
  /** bundled/tool/lsp_server.py of the installed extension, when the .vsix carries bundled/libs. */
  bundledServer?: string;
  /** The interpreter the Python extension selected for the workspace (only asked in a trusted one). */
  pythonFromExtension?: string;
}

/**
 * How to start the server: `gpa.server.command` as it is; else an interpreter (`gpa.server.python`,
 * else the Python extension's, in a trusted workspace, else `python3`) running the bundled server
 * (`bundled/tool/lsp_server.py`, with `gpa.importStrategy`) when the .vsix has one, else
 * `-m gpa_lsp.server.server` from that interpreter's environment.
 */
export function serverLaunch(src: SettingsSource, trusted: boolean, home = "", ctx: LaunchContext = {}): ServerLaunch {
  const expand = (s: string) => (home && (s === "~" || s.startsWith("~/")) ? home + s.slice(1) : s);
  const command = effectiveValue(src, "server.command", trusted);
  if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === "string" && c)) {
    return { command: expand(command[0]), args: command.slice(1), from: "gpa.server.command" };
  }
  const python = effectiveValue(src, "server.python", trusted);
  let interpreter = "python3";
  let from: ServerLaunch["from"] = "default";
  if (typeof python === "string" && python) {
    interpreter = expand(python);
    from = "gpa.server.python";
  } else if (trusted && ctx.pythonFromExtension) {
    interpreter = ctx.pythonFromExtension;
    from = "python extension";
  }
  if (ctx.bundledServer) {
    const importStrategy: ImportStrategy = effectiveValue(src, "importStrategy", trusted) === "fromEnvironment" ? "fromEnvironment" : "useBundled";
    return { command: interpreter, args: [ctx.bundledServer], from, importStrategy, env: { GPA_IMPORT_STRATEGY: importStrategy } };
  }
  return { command: interpreter, args: ["-m", "gpa_lsp.server.server"], from };
}
