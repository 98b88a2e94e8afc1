/** The status bar item: what the server is doing (gpa/status) and the last result. */
import * as vscode from "vscode";
import { StatusParams } from "./protocol";

const ICONS: Record<string, string> = {
  idle: "$(pulse)",
  building: "$(sync~spin)",
  profiling: "$(sync~spin)",
  analysing: "$(sync~spin)",
  measuring: "$(sync~spin)",
  verifying: "$(beaker~spin)",
  error: "$(error)",
  untrusted: "$(shield)",
  starting: "$(loading~spin)",
  stopped: "$(debug-disconnect)",
};

export const UNTRUSTED_TOOLTIP =
  "Restricted Mode: gpa-lsp builds and runs nothing in an untrusted folder, because building and " +
  "profiling execute the folder's own commands. Recorded profiles are still shown. " +
  "Trust the folder (Manage Workspace Trust) to profile.";

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private last: StatusParams | undefined;
  private lastResult: string | undefined;
  readonly history: StatusParams[] = [];

  constructor() {
    this.item = vscode.window.createStatusBarItem("gpa.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "GPA";
    this.item.show();
  }

  /** A state the client knows by itself (server starting, stopped, untrusted before the server says so). */
  local(state: string, message: string): void {
    this.update({ state: state as StatusParams["state"], message });
  }

  update(status: StatusParams): void {
    this.last = status;
    this.history.push(status);
    if (status.result) {
      this.lastResult = status.result;
    }
    const icon = ICONS[status.state] ?? "$(pulse)";
    // "measuring" / "verifying": the advice is shown and a later phase refines it (unit throughput,
    // fixes compiled and timed): show the result
    const busy = status.state === "building" || status.state === "profiling" || status.state === "analysing";
    let text = `${icon} GPA: ${status.state === "untrusted" ? "restricted" : status.state}`;
    if (status.state === "untrusted" && this.lastResult) {
      text = `${icon} GPA: restricted | ${this.lastResult}`;
    } else if (!busy && status.state !== "error" && this.lastResult) {
      text = `${icon} GPA: ${this.lastResult}${status.fromCache ? " (cached)" : ""}`;
    }
    this.item.text = text;
    const tip = new vscode.MarkdownString();
    tip.appendText(status.message || status.state);
    if (this.lastResult) {
      tip.appendMarkdown(`\n\nLast result: **${escape(this.lastResult)}**${status.fromCache ? " (from the cache)" : ""}`);
    }
    if (status.state === "untrusted") {
      tip.appendText("\n\n" + UNTRUSTED_TOOLTIP);
    }
    this.item.tooltip = tip;
    this.item.command = status.state === "untrusted" ? "workbench.trust.manage" : busy ? "gpa.cancel" : "gpa.report";
    this.item.backgroundColor =
      status.state === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : status.state === "untrusted"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  get current(): StatusParams | undefined {
    return this.last;
  }

  get text(): string {
    return this.item.text;
  }

  dispose(): void {
    this.item.dispose();
  }
}

function escape(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|]/g, "\\$&");
}
