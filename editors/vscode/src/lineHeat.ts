/**
 * Line heat: each sampled line gets a background tint and a gutter bar whose
 * strength follows its share of the samples (gpa/lineHeat). Shares are
 * bucketed into a few levels, each one decoration type, because VS Code
 * decorations are styled per type, not per range.
 */
import * as vscode from "vscode";
import { heatLevel, LEVELS } from "./heat";
import { LineHeatEntry, LineHeatParams } from "./protocol";

function gutterIcon(level: number): vscode.Uri {
  const width = 2 + level; // wider bar = hotter line
  const opacity = (0.3 + (0.7 * level) / LEVELS).toFixed(2);
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16">` +
    `<rect x="0" y="0" width="${width}" height="16" fill="#ff4d00" fill-opacity="${opacity}"/></svg>`;
  return vscode.Uri.parse("data:image/svg+xml;base64," + Buffer.from(svg).toString("base64"));
}

export class LineHeat implements vscode.Disposable {
  private readonly types: vscode.TextEditorDecorationType[] = [];
  private readonly heat = new Map<string, LineHeatEntry[]>();
  private readonly applied = new Map<string, { line: number; level: number }[]>();
  private enabled: boolean;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(enabled: boolean) {
    this.enabled = enabled;
    for (let level = 1; level <= LEVELS; level++) {
      const alpha = (0.06 + (0.34 * level) / LEVELS).toFixed(2);
      this.types.push(
        vscode.window.createTextEditorDecorationType({
          isWholeLine: true,
          backgroundColor: `rgba(255, 77, 0, ${alpha})`,
          gutterIconPath: gutterIcon(level),
          gutterIconSize: "contain",
          overviewRulerColor: `rgba(255, 77, 0, ${alpha})`,
          overviewRulerLane: vscode.OverviewRulerLane.Right,
        }),
      );
    }
    this.subscriptions.push(vscode.window.onDidChangeVisibleTextEditors((editors) => editors.forEach((e) => this.draw(e))));
  }

  update(params: LineHeatParams): void {
    const key = vscode.Uri.parse(params.uri).toString();
    if (params.lines.length === 0) {
      this.heat.delete(key);
    } else {
      this.heat.set(key, params.lines);
    }
    this.redraw(key);
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.redraw();
  }

  clear(): void {
    this.heat.clear();
    this.redraw();
  }

  /** The heat the server sent for a file. */
  lines(uri: string): LineHeatEntry[] {
    return this.heat.get(vscode.Uri.parse(uri).toString()) ?? [];
  }

  /** What is drawn now in the visible editors of a file (for tests and the driver). */
  drawn(uri: string): { line: number; level: number }[] {
    return this.applied.get(vscode.Uri.parse(uri).toString()) ?? [];
  }

  private redraw(only?: string): void {
    for (const editor of vscode.window.visibleTextEditors) {
      if (!only || editor.document.uri.toString() === only) {
        this.draw(editor);
      }
    }
  }

  private draw(editor: vscode.TextEditor): void {
    const key = editor.document.uri.toString();
    const lines = this.enabled ? (this.heat.get(key) ?? []) : [];
    const maxShare = Math.max(0, ...lines.map((l) => l.share));
    const byLevel: vscode.DecorationOptions[][] = this.types.map(() => []);
    const applied: { line: number; level: number }[] = [];
    for (const entry of lines) {
      const level = heatLevel(entry.share, maxShare);
      if (level === 0 || entry.line < 0 || entry.line >= editor.document.lineCount) {
        continue;
      }
      const hover = new vscode.MarkdownString(
        `GPA: **${(entry.share * 100).toFixed(1)}%** of the samples (${entry.samples} samples) on this line`,
      );
      byLevel[level - 1].push({ range: new vscode.Range(entry.line, 0, entry.line, 0), hoverMessage: hover });
      applied.push({ line: entry.line, level });
    }
    this.types.forEach((type, i) => editor.setDecorations(type, byLevel[i]));
    this.applied.set(key, applied);
  }

  dispose(): void {
    this.types.forEach((t) => t.dispose());
    this.subscriptions.forEach((s) => s.dispose());
  }
}
