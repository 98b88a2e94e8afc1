// End-to-end driver for the gpa-lsp extension, run inside a real VS Code
// (code-server). It uses public APIs only, the way a user's actions reach
// the extension, and writes what it saw as JSON for
// tests/editors/test_vscode_e2e.py to assert on. It judges nothing itself:
// every step records its outcome (or its error) and the next step runs.
//
// Config (JSON file named by $GPA_E2E_CONFIG):
//   out        where to write the findings
//   mode       "trusted" | "untrusted"
//   file       absolute path of the .cu to open
//   waitS      seconds to wait for the server's diagnostics
"use strict";
const vscode = require("vscode");
const fs = require("fs");
const path = require("path");

const EXTENSION_ID = "gpa-lsp.gpa-lsp";

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function withTimeout(promise, ms, what) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)),
  ]);
}

function rangeJson(r) {
  return r && { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

const SEVERITY = ["error", "warning", "information", "hint"];

function diagJson(d) {
  return {
    message: d.message,
    severity: SEVERITY[d.severity],
    range: rangeJson(d.range),
    source: d.source,
    code: typeof d.code === "object" && d.code ? String(d.code.value) : d.code === undefined ? null : String(d.code),
  };
}

function ours(uri) {
  return vscode.languages.getDiagnostics(uri).filter((d) => (d.source || "").toLowerCase().startsWith("gpa"));
}

function contentText(c) {
  if (typeof c === "string") return c;
  if (c && typeof c.value === "string") return c.value;
  return JSON.stringify(c);
}

/** Resolves when a diagnostics change for `uri` satisfies `pred`, or after `ms` with the last state. */
function waitForDiagnostics(uri, pred, ms) {
  return new Promise((resolve) => {
    const now = ours(uri);
    if (pred(now)) return resolve({ diagnostics: now, changed: false, timedOut: false });
    const key = uri.toString();
    const timer = setTimeout(() => {
      sub.dispose();
      resolve({ diagnostics: ours(uri), changed: false, timedOut: true });
    }, ms);
    const sub = vscode.languages.onDidChangeDiagnostics((e) => {
      if (!e.uris.some((u) => u.toString() === key)) return;
      const d = ours(uri);
      if (pred(d)) {
        clearTimeout(timer);
        sub.dispose();
        resolve({ diagnostics: d, changed: true, timedOut: false });
      }
    });
  });
}

function summarize(value) {
  if (value === undefined || value === null) return { type: String(value) };
  if (typeof value !== "object") return { type: typeof value, value };
  const out = { type: "object", keys: Object.keys(value) };
  if (typeof value.markdown === "string") {
    out.markdownLength = value.markdown.length;
    out.markdownHead = value.markdown.slice(0, 400);
  }
  for (const k of ["kernel", "estimated", "achieved", "message", "started", "reason"]) {
    if (k in value) out[k] = value[k];
  }
  return out;
}

async function step(findings, name, fn) {
  const t0 = Date.now();
  try {
    findings.steps[name] = { ok: true, ...(await fn()), ms: Date.now() - t0 };
  } catch (err) {
    findings.steps[name] = { ok: false, error: String((err && err.stack) || err), ms: Date.now() - t0 };
  }
}

async function run(config) {
  const findings = {
    driver: "gpa-e2e-driver",
    mode: config.mode,
    vscodeVersion: vscode.version,
    appName: vscode.env.appName,
    trusted: vscode.workspace.isTrusted,
    workspaceFolders: (vscode.workspace.workspaceFolders || []).map((f) => f.uri.fsPath),
    steps: {},
  };
  const uri = vscode.Uri.file(config.file);
  let api;
  let doc;

  await step(findings, "open", async () => {
    doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return { languageId: doc.languageId, lineCount: doc.lineCount };
  });

  await step(findings, "activate", async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
    api = await withTimeout(Promise.resolve(ext.activate()), 30000, "activation");
    return { isActive: ext.isActive, version: ext.packageJSON.version, untrustedWorkspaces: ext.packageJSON.capabilities.untrustedWorkspaces };
  });
  if (!api) return findings;

  await step(findings, "tomlSchema", async () => {
    // What Even Better TOML (taplo's syncExtensionSchemas) reads from every extension when it
    // starts: contributes.tomlValidation of each packageJSON, url handed to taplo as it is.
    const rules = [];
    for (const ext of vscode.extensions.all) {
      const tv = ext.packageJSON && ext.packageJSON.contributes && ext.packageJSON.contributes.tomlValidation;
      if (!Array.isArray(tv)) continue;
      for (const rule of tv) rules.push({ extension: ext.id.toLowerCase(), fileMatch: rule.fileMatch, url: rule.url });
    }
    const loaded = [];
    for (const r of rules.filter((r) => r.extension === EXTENSION_ID)) {
      const schema = JSON.parse(Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.parse(r.url, true))).toString("utf8"));
      loaded.push({ url: r.url, title: schema.title, sections: Object.keys(schema.properties || {}) });
    }
    const sections = new Set();
    for (const t of await vscode.workspace.findFiles("**/gpa.toml", null, 5)) {
      const text = Buffer.from(await vscode.workspace.fs.readFile(t)).toString("utf8");
      for (const m of text.matchAll(/^\s*\[([A-Za-z_.]+)\]\s*$/gm)) sections.add(m[1]);
    }
    return { rules, loaded, workspaceSections: [...sections] };
  });

  await step(findings, "server", async () => {
    let error = null;
    try {
      await withTimeout(api.ready(), 60000, "server start");
    } catch (err) {
      error = String((err && err.message) || err);
    }
    return { running: error === null, error, launch: api.launch(), initializationOptions: api.initializationOptions() };
  });
  const running = findings.steps.server.ok && findings.steps.server.running;

  if (running && config.mode === "init") {
    // a CMake project without gpa.toml: the command palette's "GPA: Create gpa.toml", then the advice
    await step(findings, "init", async () => {
      const before = (await vscode.workspace.findFiles("gpa.toml", null, 1)).length;
      const result = await withTimeout(Promise.resolve(vscode.commands.executeCommand("gpa.init")), 90000, "gpa.init");
      const files = await vscode.workspace.findFiles("gpa.toml", null, 1);
      const text = files.length ? Buffer.from(await vscode.workspace.fs.readFile(files[0])).toString("utf8") : "";
      const created = result && typeof result === "object" ? result.created : undefined;
      return { before, result: summarize(result), created, files: files.length, text };
    });
  }

  if (config.mode === "untrusted") {
    await step(findings, "profileRefused", async () => {
      const result = await vscode.commands.executeCommand("gpa.profile");
      return { result: summarize(result), notices: api.notices() };
    });
  }

  if (running) {
    await step(findings, "diagnostics", async () => {
      const got = await waitForDiagnostics(uri, (d) => d.length > 0, (config.waitS || 120) * 1000);
      return { timedOut: got.timedOut, diagnostics: got.diagnostics.map(diagJson) };
    });
    const diags = ours(uri);
    const first = diags[0];

    await step(findings, "hover", async () => {
      if (!first) throw new Error("no gpa diagnostic to hover");
      const hovers = [];
      for (const d of diags.slice(0, 3)) {
        const h = await vscode.commands.executeCommand("vscode.executeHoverProvider", uri, d.range.start);
        hovers.push({ at: rangeJson(d.range).start, texts: (h || []).flatMap((x) => x.contents.map(contentText)) });
      }
      return { hovers };
    });

    await step(findings, "codeLens", async () => {
      const lenses = (await vscode.commands.executeCommand("vscode.executeCodeLensProvider", uri, 50)) || [];
      const listed = lenses.map((l) => ({ range: rangeJson(l.range), title: l.command && l.command.title, command: l.command && l.command.command }));
      const withCommand = lenses.find((l) => l.command && l.command.command);
      let executed = null;
      if (withCommand) {
        const result = await withTimeout(
          Promise.resolve(vscode.commands.executeCommand(withCommand.command.command, ...(withCommand.command.arguments || []))),
          60000,
          "code lens command",
        );
        executed = { command: withCommand.command.command, result: summarize(result) };
      }
      return { lenses: listed, executed };
    });

    await step(findings, "report", async () => {
      const result = await withTimeout(Promise.resolve(vscode.commands.executeCommand("gpa.report")), 60000, "gpa.report");
      await sleep(500);
      const reportDocs = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "gpa-report");
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
      return { result: summarize(result), reportDocuments: reportDocs.map((d) => ({ uri: d.uri.toString(), languageId: d.languageId, length: d.getText().length })), tabs };
    });

    await step(findings, "status", async () => ({
      current: api.status(),
      states: api.statusHistory().map((s) => s.state),
      statusBarText: api.statusBarText(),
    }));

    await step(findings, "lineHeat", async () => {
      // Heat arrives after the analysis; give it a moment if it is not here yet.
      for (let i = 0; i < 20 && api.lineHeat(uri.toString()).length === 0; i++) await sleep(250);
      await vscode.window.showTextDocument(doc, { preview: false });
      await sleep(300);
      return { received: api.lineHeat(uri.toString()), drawn: api.drawnHeat(uri.toString()) };
    });

    if (config.mode === "trusted") {
      await step(findings, "quickFix", async () => {
        const candidates = ours(uri);
        for (const d of candidates) {
          const actions = (await vscode.commands.executeCommand("vscode.executeCodeActionProvider", uri, d.range, vscode.CodeActionKind.QuickFix.value)) || [];
          const fix = actions.find((a) => a.edit && a.edit.size > 0);
          if (!fix) continue;
          const before = ours(uri).map(diagJson);
          const edits = fix.edit.entries().map(([u, es]) => ({ uri: u.toString(), edits: es.map((e) => ({ range: rangeJson(e.range), newText: e.newText })) }));
          const textBefore = doc.getText();
          // Any publish for this file after the edit counts as the refresh.
          const change = new Promise((resolve) => {
            const timer = setTimeout(() => { sub.dispose(); resolve(false); }, (config.waitS || 120) * 1000);
            const sub = vscode.languages.onDidChangeDiagnostics((e) => {
              if (e.uris.some((u) => u.toString() === uri.toString())) { clearTimeout(timer); sub.dispose(); resolve(true); }
            });
          });
          const applied = await vscode.workspace.applyEdit(fix.edit);
          const saved = await doc.save();
          const changed = await change;
          await sleep(1000); // let a publish that follows the first one land
          return {
            diagnostic: diagJson(d),
            action: { title: fix.title, kind: fix.kind && fix.kind.value, isPreferred: !!fix.isPreferred, edits },
            applied,
            saved,
            textChanged: doc.getText() !== textBefore,
            refreshed: changed,
            before,
            after: ours(uri).map(diagJson),
            allActions: actions.map((a) => ({ title: a.title, kind: a.kind && a.kind.value, hasEdit: !!a.edit, command: a.command && a.command.command })),
          };
        }
        throw new Error(`no quick fix with an edit among ${candidates.length} gpa diagnostics`);
      });
    }
  } else {
    await step(findings, "status", async () => ({
      current: api.status(),
      states: api.statusHistory().map((s) => s.state),
      statusBarText: api.statusBarText(),
    }));
  }
  findings.notices = api.notices();
  // Leave the .cu in front, cursor on the first diagnostic, for the script's screenshot.
  if (doc) {
    const editor = await vscode.window.showTextDocument(doc, { preview: false });
    const first = ours(uri)[0];
    if (first) {
      editor.selection = new vscode.Selection(first.range.start, first.range.start);
      editor.revealRange(first.range, vscode.TextEditorRevealType.InCenter);
    }
    await sleep(1500);
  }
  return findings;
}

function activate() {
  const configPath = process.env.GPA_E2E_CONFIG;
  if (!configPath) return;
  const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
  const write = (obj) => {
    fs.mkdirSync(path.dirname(config.out), { recursive: true });
    fs.writeFileSync(config.out + ".tmp", JSON.stringify(obj, null, 2));
    fs.renameSync(config.out + ".tmp", config.out); // the script waits for this file: write it whole
  };
  run(config).then(
    (findings) => write({ ...findings, finished: true }),
    (err) => write({ finished: false, fatal: String((err && err.stack) || err) }),
  );
}

module.exports = { activate, deactivate() {} };
