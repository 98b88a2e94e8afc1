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
export const CLIENT_KEYS = ["server.command", "server.python", "lineHeat"] as const;

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

export interface ServerLaunch {
  command: string;
  args: string[];
  /** Which setting chose it, for messages. */
  from: "gpa.server.command" | "gpa.server.python" | "default";
}

/** How to start the server: `gpa.server.command`, else `<gpa.server.python> -m gpa_lsp.server.server`. */
export function serverLaunch(src: SettingsSource, trusted: boolean, home = ""): ServerLaunch {
  const expand = (s: string) => (home && (s === "~" || s.startsWith("~/")) ? home + s.slice(1) : s);
  const command = effectiveValue(src, "server.command", trusted);
  if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === "string" && c)) {
    return { command: expand(command[0]), args: command.slice(1), from: "gpa.server.command" };
  }
  const python = effectiveValue(src, "server.python", trusted);
  if (typeof python === "string" && python) {
    return { command: expand(python), args: ["-m", "gpa_lsp.server.server"], from: "gpa.server.python" };
  }
  return { command: "python3", args: ["-m", "gpa_lsp.server.server"], from: "default" };
}
