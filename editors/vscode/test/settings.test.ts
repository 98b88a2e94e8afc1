// Unit tests of the pure parts (no VS Code): which settings reach the server, how it is started, heat levels.
import assert from "node:assert/strict";
import { test } from "node:test";
import { heatLevel, LEVELS } from "../src/heat";
import { Inspected, serverLaunch, serverSettings, SettingsSource } from "../src/settings";

function source(values: Record<string, Inspected>): SettingsSource {
  return { inspect: (key) => values[key] ?? { defaultValue: undefined } };
}

test("only values the user set are sent, nested by section", () => {
  const src = source({
    "build.nvccFlags": { defaultValue: ["-O3", "-arch=sm_90"] },
    "profile.collector": { defaultValue: "cupti", workspaceValue: "replay" },
    "advice.warning": { defaultValue: 1.1, globalValue: 1.2, workspaceFolderValue: 1.3 },
  });
  assert.deepEqual(serverSettings(src, true), { profile: { collector: "replay" }, advice: { warning: 1.3 } });
});

test("an untrusted folder's restricted values are dropped, the user's kept", () => {
  const src = source({
    "harness.command": { workspaceValue: ["./evil"], globalValue: ["./mine"] },
    "build.command": { workspaceValue: ["make"] },
    "harness.timeout": { workspaceValue: 30 },
  });
  assert.deepEqual(serverSettings(src, false), { harness: { command: ["./mine"], timeout: 30 } });
  assert.deepEqual(serverSettings(src, true), { harness: { command: ["./evil"], timeout: 30 }, build: { command: ["make"] } });
});

test("the trust list comes from user settings only, even in a trusted folder", () => {
  const src = source({ trustedWorkspaces: { workspaceValue: ["/ws"], globalValue: ["/home/me/cuda"] } });
  assert.deepEqual(serverSettings(src, true), { trustedWorkspaces: ["/home/me/cuda"] });
  assert.deepEqual(serverSettings(source({ trustedWorkspaces: { workspaceValue: ["/ws"] } }), true), {});
});

test("server launch: command list, else python -m, else python3; untrusted folders cannot choose", () => {
  const cmd = source({ "server.command": { workspaceValue: ["gpa-lsp", "--log-level", "debug"] }, "server.python": { globalValue: "~/venv/bin/python" } });
  assert.deepEqual(serverLaunch(cmd, true, "/home/me"), { command: "gpa-lsp", args: ["--log-level", "debug"], from: "gpa.server.command" });
  assert.deepEqual(serverLaunch(cmd, false, "/home/me"), {
    command: "/home/me/venv/bin/python",
    args: ["-m", "gpa_lsp.server.server"],
    from: "gpa.server.python",
  });
  assert.deepEqual(serverLaunch(source({ "server.python": { defaultValue: "" } }), true), {
    command: "python3",
    args: ["-m", "gpa_lsp.server.server"],
    from: "default",
  });
});

test("the bundled server: gpa.server.python, else the Python extension's interpreter (trusted only), else python3", () => {
  const ctx = { bundledServer: "/ext/bundled/tool/lsp_server.py", pythonFromExtension: "/ws/.venv/bin/python" };
  const bundled = { args: ["/ext/bundled/tool/lsp_server.py"], importStrategy: "useBundled", env: { GPA_IMPORT_STRATEGY: "useBundled" } };
  assert.deepEqual(serverLaunch(source({}), true, "", ctx), { command: "/ws/.venv/bin/python", from: "python extension", ...bundled });
  // an untrusted folder does not choose the interpreter through the Python extension either
  assert.deepEqual(serverLaunch(source({}), false, "", ctx), { command: "python3", from: "default", ...bundled });
  const mine = source({ "server.python": { globalValue: "~/py/bin/python3" } });
  assert.deepEqual(serverLaunch(mine, true, "/home/me", ctx), { command: "/home/me/py/bin/python3", from: "gpa.server.python", ...bundled });
  // without bundled libs in the .vsix: the interpreter's own gpa-lsp, as before
  assert.deepEqual(serverLaunch(source({}), true, "", { pythonFromExtension: "/ws/.venv/bin/python" }), {
    command: "/ws/.venv/bin/python",
    args: ["-m", "gpa_lsp.server.server"],
    from: "python extension",
  });
  // gpa.server.command still wins, as it is
  const cmd = source({ "server.command": { globalValue: ["gpa-lsp"] } });
  assert.deepEqual(serverLaunch(cmd, true, "", ctx), { command: "gpa-lsp", args: [], from: "gpa.server.command" });
});

test("gpa.importStrategy: fromEnvironment reaches the bundled server, anything else is useBundled", () => {
  const ctx = { bundledServer: "/ext/bundled/tool/lsp_server.py" };
  const fromEnv = serverLaunch(source({ importStrategy: { globalValue: "fromEnvironment" } }), true, "", ctx);
  assert.equal(fromEnv.importStrategy, "fromEnvironment");
  assert.deepEqual(fromEnv.env, { GPA_IMPORT_STRATEGY: "fromEnvironment" });
  assert.equal(serverLaunch(source({ importStrategy: { globalValue: "bogus" } }), true, "", ctx).importStrategy, "useBundled");
  assert.equal(serverLaunch(source({ importStrategy: { defaultValue: "useBundled" } }), true, "", ctx).importStrategy, "useBundled");
});

test("heat levels grow with the share, the hottest line at the top level", () => {
  assert.equal(heatLevel(0.4, 0.4), LEVELS);
  assert.equal(heatLevel(0.01, 0.4), 1);
  assert.equal(heatLevel(0.001, 0.4), 0); // under 2% of the hottest line: noise, not drawn
  assert.equal(heatLevel(0, 0.4), 0);
  assert.equal(heatLevel(0.2, 0.4), Math.ceil(LEVELS / 2));
  assert.ok(heatLevel(0.1, 0.4) < heatLevel(0.3, 0.4));
});
