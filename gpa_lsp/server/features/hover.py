"""The hover of a profiled line: where its time went, in markdown.

Samples by stall reason (own), the stalls blamed on this line's
instructions and the lines where they were seen, the issued share, the
line's SASS with per-instruction samples, and the advice that points here.
One section per kernel when the line runs in several (an inlined device
function). ``register`` wires ``textDocument/hover``; the rest is pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lsprotocol import types

from ..results import FileView
from ...analysis.model import Advice, KernelReport, LineStats
from ...verify.model import short_device

MAX_SASS = 24


def _pct(n: float, total: float) -> str:
    return f"{(n / total):.1%}" if total else "-"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def line_section(kernel: KernelReport, stats: LineStats, total_samples: int) -> list[str]:
    name = kernel.demangled or kernel.name
    own = stats.samples
    out = [f"**{_md(name)}** line {stats.line}: {own} samples "
           f"({_pct(own, kernel.samples)} of the kernel, {_pct(own, total_samples)} of the profile), "
           f"issued {_pct(stats.issued, own)}"]
    if stats.by_reason:
        out += ["", "| stall reason | samples | share |", "|---|---:|---:|"]
        for reason, n in sorted(stats.by_reason, key=lambda rn: -rn[1]):
            out.append(f"| {reason} | {n} | {_pct(n, own)} |")
    if stats.blamed:
        cats = ", ".join(f"{c.replace('_', ' ')} {v:.0f}" for c, v in sorted(stats.blamed_by_category, key=lambda cv: -cv[1]))
        out += ["", f"**Blamed on this line:** {stats.blamed:.0f} stall samples" + (f" ({cats})" if cats else "")]
        if stats.blamed_from:
            out += ["", "| seen at | samples |", "|---|---:|"]
            for f, ln, n in sorted(stats.blamed_from, key=lambda x: -x[2])[:8]:
                out.append(f"| {_md(Path(f).name)}:{ln} | {n:.0f} |")
    if stats.instructions:
        shown = list(stats.instructions)
        if len(shown) > MAX_SASS:      # a long line: its hottest instructions, still in address order
            keep = set(sorted(range(len(shown)), key=lambda i: -shown[i][2])[:MAX_SASS])
            shown = [ins for i, ins in enumerate(shown) if i in keep]
        out += ["", "```sass"]
        width = max(len(t) for _, t, _ in shown)
        for off, text, n in shown:
            out.append(f"/*{off:04x}*/ {text.ljust(width)}  {n:>6}" if n else f"/*{off:04x}*/ {text}")
        hidden = len(stats.instructions) - len(shown)
        if hidden:
            rest = stats.samples - sum(n for _, _, n in shown)
            out.append(f"... {hidden} colder instructions not shown ({max(rest, 0)} samples)")
        out.append("```")
    return out


def advice_section(items: Sequence[tuple[KernelReport, Advice]]) -> list[str]:
    out: list[str] = []
    for kernel, a in items:
        rng = (f" (range {a.estimate_low:.2f}-{a.estimate_high:.2f}x)"
               if a.estimate_low is not None and a.estimate_high is not None else "")
        bound = f"; {a.bound_text()}" if a.bounded_by else ""
        out += ["", f"**{_md(a.title)}** (`{a.optimizer}`): est. **{a.estimated_speedup:.2f}x**{rng}{bound} on "
                    f"{_md(kernel.demangled or kernel.name)}, {a.ratio:.1%} of its samples", "",
                _md(a.suggestion.strip())]
        lo, hi = a.sampling_interval
        conf = f" — {a.confidence_text()}" if a.low_confidence else ""
        out += ["", f"_sampling: {lo:.2f}-{hi:.2f}x from {a.kernel_samples} samples of the kernel{conf}_"]
        if a.verification is not None:
            out += ["", f"_{_md(a.verification.summary(short_device(a.verification.device)))}_"]
    return out


def hover_markdown(line_stats: Sequence[tuple[KernelReport, LineStats]],
                   advice: Sequence[tuple[KernelReport, Advice]], total_samples: int,
                   note: str = "") -> str | None:
    if not line_stats and not advice:
        return None
    parts: list[str] = ["### GPA"]
    for kernel, stats in line_stats:
        parts += [""] + line_section(kernel, stats, total_samples)
    if advice:
        parts += advice_section(advice)
    if note:
        parts += ["", f"_{_md(note)}_"]
    return "\n".join(parts)


def hover_note(from_cache: bool, file_changed: bool) -> str:
    """The hover's footnote: why its figures may not match the text."""
    if file_changed:
        return "the file changed since this profile: save to refresh"
    return "from an earlier run" if from_cache else ""


def line_hover(view: FileView, line1: int, total_samples: int, line0: int, note: str = "") -> types.Hover | None:
    """The hover of the analysed line ``line1`` (1-based, as profiled), shown on line ``line0`` of
    the current text."""
    stats = view.lines.get(line1, [])
    adv = [(k, a) for k, a in view.advice if a.location and a.location.line == line1]
    md = hover_markdown(stats, adv, total_samples, note)
    if md is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md),
                       range=types.Range(types.Position(line0, 0), types.Position(line0 + 1, 0)))


def register(ls) -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        found = ls.view_of(uri)
        if found is None:
            return None
        folder, path, view = found
        orig = ls.tracker.original(uri, params.position.line)
        if orig is None:
            return None
        rep = folder.analysis.report
        note = hover_note(folder.analysis.outcome.from_cache, ls.file_is_stale(folder, path))
        return line_hover(view, orig + 1, rep.total_samples if rep else 0, params.position.line, note)
