/** The server's additions to LSP (docs/protocol.md), as types and method names; the Python side is
 * gpa_lsp/server/protocol.py (tests/server/test_protocol.py checks that they agree). */
import { NotificationType } from "vscode-languageclient/node";

export type RunState = "idle" | "building" | "profiling" | "analysing" | "measuring" | "verifying" | "error" | "untrusted";

export interface StatusParams {
  state: RunState;
  message: string;
  root?: string;
  result?: string | null;
  fromCache?: boolean;
}

export interface LineHeatEntry {
  line: number; // 0-based
  share: number; // 0..1 of the kernel's samples
  samples: number;
}

export interface LineHeatParams {
  uri: string;
  lines: LineHeatEntry[];
}

export const StatusNotification = new NotificationType<StatusParams>("gpa/status");
export const LineHeatNotification = new NotificationType<LineHeatParams>("gpa/lineHeat");

export interface ProfileResult {
  started: boolean;
  reason?: "untrusted";
  message?: string;
}

export interface CancelResult {
  cancelled: boolean;
}

export interface ReportResult {
  markdown: string;
}

export interface ApplyAndMeasureResult {
  kernel: string;
  estimated: number;
  achieved: number | null;
  message: string;
  diff?: string; // gpa diff's text for the kernel
}

export interface DoctorCheck {
  name: string;
  status: "ok" | "missing" | "warning" | "n/a";
  detail: string;
  fix: string;
  needed_for: string[];
}

/** gpa.doctor: `gpa doctor --json`'s checks, and the same as markdown. */
export interface DoctorResult {
  checks: DoctorCheck[];
  ready: Record<string, boolean>;
  markdown: string;
  error?: string;
}

/** gpa.init: whether gpa.toml was created for the folder (a workspace/applyEdit), and what to do next. */
export interface InitResult {
  created: boolean;
  message: string;
  path?: string;
}

/**
 * Commands that this extension registers itself (with client-side behaviour:
 * trust checks, showing the report, progress) and sends to the server as
 * workspace/executeCommand. The language client must not register them again.
 */
export const CLIENT_OWNED_COMMANDS = new Set(["gpa.profile", "gpa.report", "gpa.applyAndMeasure", "gpa.cancel", "gpa.doctor", "gpa.init"]);
