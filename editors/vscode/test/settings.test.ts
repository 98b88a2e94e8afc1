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

test("heat levels grow with the share, the hottest line at the top level", () => {
  assert.equal(heatLevel(0.4, 0.4), LEVELS);
  assert.equal(heatLevel(0.01, 0.4), 1);
  assert.equal(heatLevel(0.001, 0.4), 0); // under 2% of the hottest line: noise, not drawn
  assert.equal(heatLevel(0, 0.4), 0);
  assert.equal(heatLevel(0.2, 0.4), Math.ceil(LEVELS / 2));
  assert.ok(heatLevel(0.1, 0.4) < heatLevel(0.3, 0.4));
});
