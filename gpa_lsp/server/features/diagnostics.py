"""Advice, compiler messages and configuration errors as LSP diagnostics.

Pure conversions from plain data to lsprotocol objects; the server decides
where (which URI) and when to publish (``publishing.py``). Lines in: 1-based
(report, nvcc, config); lines out: 0-based LSP positions. ``register``
follows the open documents: an edit moves the published diagnostics and
line heat with the text (``tracking.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from lsprotocol import types
from pygls.uris import from_fs_path

from ...analysis.model import Advice, KernelReport, to_json
from ...verify.model import short_device
from ...config import AdviceConfig, _line_of  # _line_of: the same lookup config errors use
from ...errors import ConfigError, GpaError
from ..folder import uri_path
from ..pipeline import CompilerDiagnostic
from .. import protocol

SOURCE = "gpa"
_DOCS = Path(__file__).resolve().parents[3] / "docs" / "optimizers.md"
DOCS_URL = "https://github.com/gpa-lsp/gpa-lsp/blob/main/docs/optimizers.md"


def docs_href(optimizer: str) -> str:
    base = from_fs_path(str(_DOCS)) if _DOCS.is_file() else DOCS_URL
    return f"{base}#{optimizer}"


def severity_of(speedup: float, thresholds: AdviceConfig) -> types.DiagnosticSeverity:
    if speedup >= thresholds.warning:
        return types.DiagnosticSeverity.Warning
    if speedup >= thresholds.information:
        return types.DiagnosticSeverity.Information
    return types.DiagnosticSeverity.Hint


def line_range(line0: int, text: str | None) -> types.Range:
    """The line's code, without its leading indentation (whole line when its text is unknown)."""
    if text is None:
        return types.Range(types.Position(line0, 0), types.Position(line0, 1000))
    stripped = text.rstrip("\r\n")
    start = len(stripped) - len(stripped.lstrip())
    end = max(len(stripped), start + 1)
    return types.Range(types.Position(line0, start), types.Position(line0, end))


def first_sentence(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 160 else line[:157] + "..."


def advice_message(kernel: KernelReport, advice: Advice) -> str:
    name = kernel.demangled or kernel.name
    bound = f", {advice.bound_text()}" if advice.bounded_by else ""
    v = advice.verification
    figure = v.summary(short_device(v.device)) if v is not None else f"est. {advice.estimated_speedup:.2f}x"
    conf = f", {advice.confidence_text()}" if advice.low_confidence else ""
    return (f"{advice.title}: {figure}{bound}{conf} on {name} "
            f"({advice.ratio:.0%} of its samples). {first_sentence(advice.suggestion)}")


def advice_diagnostic(kernel: KernelReport, advice: Advice, line0: int, line_text: str | None,
                      thresholds: AdviceConfig, related: Sequence[tuple[str, int, str]] = (),
                      stale: bool = False) -> types.Diagnostic:
    """``related``: (uri, 0-based line, message) where the blamed stalls were observed."""
    msg = advice_message(kernel, advice)
    if stale:
        msg += " (from an earlier version of this file: save to refresh)"
    data = {
        "kernel": kernel.name,
        "optimizer": advice.optimizer,
        "estimate": advice.estimated_speedup,
        "measured": advice.verification.speedup if advice.verification is not None else None,
        "line": advice.location.line if advice.location else None,
        "file": advice.location.file if advice.location else None,
        "fix": to_json(advice.fix) if advice.fix else None,
    }
    return types.Diagnostic(
        range=line_range(line0, line_text),
        message=msg,
        severity=severity_of(advice.effective_speedup, thresholds),
        source=SOURCE,
        code=advice.optimizer,
        code_description=types.CodeDescription(href=docs_href(advice.optimizer)),
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=types.Range(types.Position(l0, 0), types.Position(l0, 1000))),
                message=m)
            for uri, l0, m in related
        ] or None,
        data=data,
    )


_NVCC_SEVERITY = {"error": types.DiagnosticSeverity.Error, "fatal": types.DiagnosticSeverity.Error,
                  "fatal error": types.DiagnosticSeverity.Error, "catastrophic error": types.DiagnosticSeverity.Error,
                  "warning": types.DiagnosticSeverity.Warning, "remark": types.DiagnosticSeverity.Information,
                  "note": types.DiagnosticSeverity.Information, "info": types.DiagnosticSeverity.Information}


def compiler_diagnostic(msg: CompilerDiagnostic, line_text: str | None) -> types.Diagnostic:
    line0 = max(0, msg.line - 1)
    if msg.column and msg.column > 0:
        rng = types.Range(types.Position(line0, msg.column - 1), types.Position(line0, msg.column))
        if line_text is not None:
            rng = types.Range(rng.start, types.Position(line0, max(msg.column, len(line_text.rstrip("\r\n")))))
    else:
        rng = line_range(line0, line_text)
    return types.Diagnostic(range=rng, message=msg.text, source="nvcc",
                            severity=_NVCC_SEVERITY.get(msg.severity.lower(), types.DiagnosticSeverity.Error))


def error_text(err: GpaError) -> str:
    text = err.message
    if err.hint:
        text += f"\nhint: {err.hint}"
    tail = getattr(err, "output_tail", "") or getattr(err, "output", "")
    if tail:
        tail = tail.strip()
        text += "\n" + "\n".join(tail.splitlines()[-15:])
    return text


def config_diagnostic(err: ConfigError, line_text: str | None) -> types.Diagnostic:
    line0 = max(0, (err.line or 1) - 1)
    return types.Diagnostic(range=line_range(line0, line_text), message=error_text(err),
                            severity=types.DiagnosticSeverity.Error, source=SOURCE, code="config")


def run_error_diagnostic(err: GpaError, line0: int, line_text: str | None) -> types.Diagnostic:
    """A failed run (harness crash, timeout, no samples) shown on the config line that set it up."""
    return types.Diagnostic(range=line_range(line0, line_text), message=error_text(err),
                            severity=types.DiagnosticSeverity.Error, source=SOURCE, code=type(err).__name__)


def find_key_line(text: str, section: str, key: str | None) -> int | None:
    """0-based line of ``key`` in ``[section]`` (or ``[tool.gpa.section]``) of a TOML text."""
    n = _line_of(text, section, key)
    return None if n is None else n - 1


def related_for(advice: Advice, resolve, limit: int = 6) -> list[tuple[str, int, str]]:
    out: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    for h in advice.hotspots:
        p = resolve(h.use.file)
        if p is None or not h.use.line:
            continue
        key = (str(p), h.use.line)
        if key in seen:
            continue
        seen.add(key)
        reason = h.reason.replace("_", " ") if h.reason else "stall"
        out.append((from_fs_path(str(p)), h.use.line - 1,
                     f"{reason} stalls observed here: {h.samples:.0f} samples ({h.ratio:.1%}), blamed on line {h.def_.line}"))
        if len(out) >= limit:
            break
    return out


def sort_key(d: types.Diagnostic) -> tuple[int, int]:
    return (d.range.start.line, int(d.severity or 4))


def by_line(diags: Iterable[types.Diagnostic]) -> list[types.Diagnostic]:
    return sorted(diags, key=sort_key)


def register(ls) -> None:
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        ls.tracker.opened(params.text_document.uri, params.text_document.text)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        moved = ls.tracker.changed(uri, params.content_changes, doc.source)
        if moved and ls.view_of(uri) is not None:
            folder, path = ls.folder_of(uri), uri_path(uri)
            ls.publish_file(folder, path)
            protocol.send(ls.protocol, ls.line_heat(folder, path))
