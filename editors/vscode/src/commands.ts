/** The commands the extension owns; each sends workspace/executeCommand to the server. */
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient } from "vscode-languageclient/node";
import { ApplyAndMeasureResult, DoctorResult, InitResult, ReportResult } from "./protocol";

export const UNTRUSTED_MESSAGE =
  "GPA: profiling is off in Restricted Mode. Profiling builds this folder and runs its harness, " +
  "so it needs a trusted workspace. Recorded profiles are still shown.";

export const REPORT_SCHEME = "gpa-report";

export interface Host {
  client(): LanguageClient | undefined;
  notice(message: string): void;
}

/** Read-only documents that hold the server's markdown reports (no "save changes?" on close). */
export class ReportDocuments implements vscode.TextDocumentContentProvider {
  private readonly content = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(uri: vscode.Uri, markdown: string): void {
    this.content.set(uri.toString(), markdown);
    this.changed.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.content.get(uri.toString()) ?? "No report yet: run GPA: Profile now.";
  }
}

function folderUri(arg: unknown): string | undefined {
  if (typeof arg === "string") {
    return arg;
  }
  if (arg instanceof vscode.Uri) {
    return (vscode.workspace.getWorkspaceFolder(arg)?.uri ?? arg).toString();
  }
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) || vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.toString();
}

async function send<T>(host: Host, command: string, args: unknown[]): Promise<T | undefined> {
  const client = host.client();
  if (!client || !client.isRunning()) {
    void vscode.window.showErrorMessage(`GPA: the language server is not running (see GPA: Show output); '${command}' was not sent.`);
    return undefined;
  }
  return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
}

function refuseUntrusted(host: Host): boolean {
  if (vscode.workspace.isTrusted) {
    return false;
  }
  host.notice(UNTRUSTED_MESSAGE);
  void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE, "Manage Workspace Trust").then((pick) => {
    if (pick) {
      void vscode.commands.executeCommand("workbench.trust.manage");
    }
  });
  return true;
}

export function registerCommands(host: Host, reports: ReportDocuments): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand("gpa.profile", async (root?: unknown) => {
      if (refuseUntrusted(host)) {
        return { started: false, reason: "untrusted" };
      }
      const uri = folderUri(root);
      return send(host, "gpa.profile", uri ? [uri] : []);
    }),

    vscode.commands.registerCommand("gpa.report", async (root?: unknown) => {
      const uri = folderUri(root);
      const result = await send<ReportResult>(host, "gpa.report", uri ? [uri] : []);
      if (!result || typeof result.markdown !== "string") {
        return result;
      }
      const name = uri ? vscode.Uri.parse(uri).path.split("/").filter(Boolean).pop() ?? "workspace" : "workspace";
      const doc = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${name} report.md`, query: uri ?? "" });
      reports.set(doc, result.markdown);
      const textDoc = await vscode.workspace.openTextDocument(doc);
      await vscode.window.showTextDocument(textDoc, { preview: true });
      try {
        await vscode.commands.executeCommand("markdown.showPreview", doc);
      } catch {
        // No markdown preview in this editor: the source tab stays open.
      }
      return result;
    }),

    vscode.commands.registerCommand("gpa.applyAndMeasure", async (arg?: { uri: string; diagnostic: unknown; fixIndex?: number }) => {
      if (refuseUntrusted(host)) {
        return undefined;
      }
      const request = arg ?? pickDiagnostic(host);
      if (!request) {
        void vscode.window.showInformationMessage("GPA: put the cursor on a GPA diagnostic to apply its fix and measure.");
        return undefined;
      }
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "GPA: applying the fix and measuring", cancellable: true },
        async (_progress, token) => {
          token.onCancellationRequested(() => void send(host, "gpa.cancel", []));
          return send<ApplyAndMeasureResult>(host, "gpa.applyAndMeasure", [request]);
        },
      );
      if (result) {
        const achieved = result.achieved === null || result.achieved === undefined ? "not measured" : `${result.achieved.toFixed(2)}x`;
        void vscode.window.showInformationMessage(
          `GPA ${result.kernel}: estimated ${result.estimated.toFixed(2)}x, achieved ${achieved}. ${result.message}`,
        );
      }
      return result;
    }),

    vscode.commands.registerCommand("gpa.cancel", async () => send(host, "gpa.cancel", [])),

    // `gpa init` for a folder: the server writes gpa.toml through an edit this editor applies
    vscode.commands.registerCommand("gpa.init", async (root?: unknown) => {
      const uri = folderUri(root);
      const result = await send<InitResult>(host, "gpa.init", uri ? [uri] : []);
      if (!result || typeof result.message !== "string") {
        return result;
      }
      if (result.created && result.path) {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(result.path));
        if (doc.isDirty) {
          await doc.save();
        }
        await vscode.window.showTextDocument(doc, { preview: false });
        void vscode.window.showInformationMessage(`GPA: ${result.message}`);
      } else {
        void vscode.window.showWarningMessage(`GPA: ${result.message}`);
      }
      return result;
    }),

    vscode.commands.registerCommand("gpa.doctor", async () => {
      const result = await send<DoctorResult>(host, "gpa.doctor", []);
      if (!result || typeof result.markdown !== "string") {
        return result;
      }
      const doc = vscode.Uri.from({ scheme: REPORT_SCHEME, path: "/gpa doctor.md" });
      reports.set(doc, result.markdown);
      const textDoc = await vscode.workspace.openTextDocument(doc);
      await vscode.window.showTextDocument(textDoc, { preview: true });
      try {
        await vscode.commands.executeCommand("markdown.showPreview", doc);
      } catch {
        // No markdown preview in this editor: the source tab stays open.
      }
      return result;
    }),
  ];
}

/** The GPA diagnostic under the cursor (else the first in the file), as the LSP shape the server expects. */
function pickDiagnostic(host: Host): { uri: string; diagnostic: unknown; fixIndex: number } | undefined {
  const editor = vscode.window.activeTextEditor;
  const client = host.client();
  if (!editor || !client) {
    return undefined;
  }
  const ours = vscode.languages.getDiagnostics(editor.document.uri).filter((d) => d.source?.startsWith("gpa"));
  const here = ours.find((d) => d.range.contains(editor.selection.active)) ?? ours[0];
  if (!here) {
    return undefined;
  }
  return {
    uri: editor.document.uri.toString(),
    diagnostic: client.code2ProtocolConverter.asDiagnostic(here),
    fixIndex: 0,
  };
}
