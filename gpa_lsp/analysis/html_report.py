"""The HTML report (``gpa report --html``): one self-contained page, for people who would rather look.

Per kernel: where its samples went by stall reason (a stacked bar and a table),
the advice, the source with each line's heat and the advice beside its line,
and the SASS of the hot region with per-instruction samples. No script, no
external style sheet, font or image: the file opens offline and can be mailed.
"""

from __future__ import annotations

import html
import os
from collections import defaultdict
from typing import Iterable

from ..profile.throughput import describe as describe_units
from .model import Advice, ChangeKind, KernelReport, LineStats, Report
from .quickfix import describe_fix
from .sources import LineReader, make_reader
from .text_report import (MARGINAL_KERNEL, _confidence_text, _estimate_text, _pct, _short, _tried_text,
                          kernel_reasons, marginal_text, select,
                          short_name)

CONTEXT = 3            # source lines shown around hot lines
MAX_SASS = 160         # instructions shown for the hot region
MIN_LINE_SHARE = 0.002  # lines below this share of the kernel count as cold

# a colour per reason; reasons of one GPA category share a hue, so related reasons look related
# (the names are CUPTI's, as in the hover)
_COLORS = {
    "long_scoreboard": "#1f5fbf", "imc_miss": "#5aa9e6", "lg_throttle": "#b5651d", "tex_throttle": "#d9913d",
    "drain": "#8c4a12", "short_scoreboard": "#e69f00", "wait": "#f2c45a", "barrier": "#d7263d",
    "membar": "#f07a85", "warpgroup_arrive": "#a4161a", "no_instructions": "#7b3fbf",
    "branch_resolving": "#b48be0", "mio_throttle": "#2a9d3f", "math_pipe_throttle": "#7cc47f",
    "dispatch_stall": "#1b6b2b", "not_selected": "#aab3bd", "selected": "#6c7a89", "misc": "#d3d8de",
    "sleeping": "#c2c9d1",
}

CSS = """
:root { --fg: #1d232a; --muted: #5b6672; --line: #e3e7ec; --bg: #ffffff; --panel: #f6f8fa; --accent: #0b5cad; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); }
header, section.kernel { padding: 16px 28px; }
header { border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 8px 0 2px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.muted, small { color: var(--muted); }
code, pre, .src td.code, .sass td { font: 12.5px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
.sig { font: 12.5px ui-monospace, Menlo, Consolas, monospace; color: var(--muted); word-break: break-all; }
.bar { display: flex; height: 22px; border-radius: 4px; overflow: hidden; border: 1px solid var(--line);
       margin: 8px 0; max-width: 980px; }
.bar span { display: block; height: 100%; }
table { border-collapse: collapse; }
table.reasons td, table.reasons th { padding: 2px 10px 2px 0; text-align: left; }
table.reasons td.n { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
ol.advice { padding-left: 22px; max-width: 1100px; } ol.advice li { margin: 6px 0; }
.est { font-weight: 600; }
.src, .sass { width: 100%; max-width: 1400px; border: 1px solid var(--line); }
.src td, .sass td { padding: 0 8px; vertical-align: top; border-bottom: 1px solid #f1f3f5; }
.src td.no { color: var(--muted); text-align: right; width: 48px; user-select: none; }
.src td.heat { width: 104px; white-space: nowrap; }
.src td.heat .pct { display: inline-block; width: 44px; text-align: right; color: var(--muted); font-size: 12px; }
.src td.code { white-space: pre; }
.src td.note { width: 34%; font-size: 12.5px; }
.src tr.gap td { color: var(--muted); text-align: center; background: var(--panel); }
.src tr.advised td.code { box-shadow: inset 3px 0 0 #d93f0b; }
.hbar { display: inline-block; height: 9px; background: #e4572e; border-radius: 2px; margin-left: 6px;
        vertical-align: middle; }
.note .tag { display: block; background: #fff4e5; border-left: 3px solid #d93f0b; padding: 2px 6px; margin: 1px 0; }
.sass td.off { color: var(--muted); width: 70px; } .sass td.n { text-align: right; width: 80px; }
.sass td.ln { color: var(--muted); width: 60px; }
footer { padding: 16px 28px; color: var(--muted); border-top: 1px solid var(--line); }
"""


def reason_color(reason: str) -> str:
    return _COLORS.get(reason, "#c2c9d1")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _prose(text: str) -> str:
    """Escaped text with `backticked` spans as <code>."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:          # an unpaired backtick: leave it as it is
        return _e(text)
    return "".join(f"<code>{_e(p)}</code>" if i % 2 else _e(p) for i, p in enumerate(parts))


def render_html(report: Report, *, reader: LineReader | None = None, kernel: str | None = None,
                top: int | None = None, min_speedup: float | None = None, title: str | None = None) -> str:
    reader = reader or make_reader()
    chosen = select(report, kernel=kernel, top=top, min_speedup=min_speedup)
    dev = (report.device or {}).get("name", "?")
    name = title or (short_name(chosen.kernels[0]) if len(chosen.kernels) == 1 else os.path.basename(report.source or "profile"))
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>GPA report: {_e(name)}</title>", f"<style>{CSS}</style></head><body>",
           "<header>", "<h1>GPA report</h1>",
           f'<div class="muted">{_e(report.source or "profile")} &middot; {_e(report.collector)} &middot; '
           f"{_e(dev)} &middot; {report.total_samples:,} samples</div>"]
    if len(chosen.kernels) > 1:
        out.append("<nav>" + "".join(f'<a href="#k{i}">{_e(short_name(k))}</a>' for i, k in enumerate(chosen.kernels))
                   + "</nav>")
    out.append("</header>")
    for i, k in enumerate(chosen.kernels):
        out.extend(_kernel(i, k, reader))
    if not chosen.kernels:
        out.append('<section class="kernel"><p>No kernel to show.</p></section>')
    out.append("<footer>Heat: a line's own samples (where warps waited), as a share of the kernel's. "
               "Stall reasons carry CUPTI's names, as in the editor's hover. Made by gpa-lsp.</footer>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _kernel(i: int, k: KernelReport, reader: LineReader) -> list[str]:
    out = [f'<section class="kernel" id="k{i}">', f"<h2>{_e(short_name(k))}"
           + (f' <small>{_e(_short(k.file))}:{k.line}</small>' if k.file and k.line else "") + "</h2>",
           f'<div class="sig">{_e(k.demangled or k.name)}</div>']
    facts = []
    if k.duration_ns:
        facts.append(f"{k.duration_ns / 1000:,.1f} us per launch")
    if k.launches:
        facts.append(f"{k.launches} launch{'es' if k.launches != 1 else ''}")
    facts.append(f"{k.samples:,} samples ({_pct(k.share)} of the profile)")
    facts.append(f"limited by {k.limiter.replace('_', ' ')}")
    out.append(f'<p class="facts">{_e(", ".join(facts))}</p>')
    out.extend(_breakdown(k))
    out.extend(_advice_list(i, k, reader))
    out.extend(_source(i, k, reader))
    out.extend(_sass(k))
    out.append("</section>")
    return out


def _breakdown(k: KernelReport) -> list[str]:
    reasons = kernel_reasons(k)
    total = sum(n for _, n in reasons) or 1
    out = ["<h3>Where the samples went (by stall reason)</h3>", '<div class="bar" role="img" aria-label="stall reasons">']
    for r, n in reasons:
        if n / total >= 0.002:
            out.append(f'<span class="seg" data-reason="{_e(r)}" style="width:{100 * n / total:.2f}%;'
                       f'background:{reason_color(r)}" title="{_e(r)} {_pct(n / total)}"></span>')
    out.append("</div>")
    out.append('<table class="reasons"><tr><th>stall reason</th><th>samples</th><th>share</th></tr>')
    for r, n in reasons[:10]:
        out.append(f'<tr><td><span class="swatch" style="background:{reason_color(r)}"></span>{_e(r)}</td>'
                   f'<td class="n">{n:,}</td><td class="n">{_pct(n / total)}</td></tr>')
    out.append("</table>")
    if k.throughput:
        out.append(f'<p class="muted">Units (share of peak): {_e(describe_units(k.throughput))}</p>')
    return out


def _advice_list(i: int, k: KernelReport, reader: LineReader) -> list[str]:
    out = ["<h3>Advice</h3>"]
    if not k.advice:
        return out + ["<p>No change is estimated to speed this kernel up by 0.5% or more.</p>"]
    if k.advice[0].marginal:
        out.append(f'<p class="muted">{_e(MARGINAL_KERNEL)}</p>')
    out.append('<ol class="advice">')
    for a in k.advice:
        loc = a.location
        where = ""
        if loc is not None and loc.file and loc.line:
            where = f' at <a href="#k{i}-L{_e(_anchor(loc.file, loc.line))}">{_e(_short(loc.file))}:{loc.line}</a>'
        share = ("a launch change (from occupancy, not from particular stalls)" if a.kind == ChangeKind.parallel
                 else f"explains {_pct(a.ratio)} of the kernel's samples")
        bound = f"; {_e(a.bound_text())}" if a.bounded_by else ""
        fix = f"<br><b>Fix:</b> {_prose(describe_fix(a.fix, reader))}." if a.fix is not None else ""
        extra = " ".join(x for x in (_tried_text(a), _confidence_text(a)) if x)
        extra = f'<br><span class="muted">{_e(extra)}</span>' if extra else ""
        out.append(f'<li class="advice-item" data-optimizer="{_e(a.optimizer)}"><b>{_e(a.title)}</b>{where}: '
                   f'<span class="est">{_e(_estimate_text(a) + marginal_text(a))}</span>{bound}; {_e(share)}.<br>'
                   f"{_prose(a.suggestion.strip())}{fix}{extra}</li>")
    out.append("</ol>")
    return out


def _anchor(file: str, line: int) -> str:
    return f"{_short(file).replace('.', '_')}-{line}"


def _windows(hot: Iterable[int], n_lines: int, context: int = CONTEXT) -> list[tuple[int, int]]:
    spans: list[list[int]] = []
    for ln in sorted(set(hot)):
        lo, hi = max(1, ln - context), min(n_lines, ln + context)
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    return [(a, b) for a, b in spans]


def _source(i: int, k: KernelReport, reader: LineReader) -> list[str]:
    by_file: dict[str, dict[int, LineStats]] = defaultdict(dict)
    for ls in k.lines:
        by_file[ls.file][ls.line] = ls
    notes: dict[tuple[str, int], list[Advice]] = defaultdict(list)
    for a in k.advice:
        if a.location is not None and a.location.file:
            notes[(a.location.file, a.location.line)].append(a)
    total = k.samples or 1
    top = max((ls.samples for ls in k.lines), default=0) or 1
    # the kernel's own file first, then other files by samples
    files = sorted(by_file, key=lambda f: (f != k.file, -sum(ls.samples for ls in by_file[f].values())))
    out = ["<h3>Source, with each line's heat</h3>"]
    shown_any = False
    for f in files:
        text = reader(f)
        samples = sum(ls.samples for ls in by_file[f].values())
        advised = [ln for (ff, ln) in notes if ff == f]
        if text is None or (samples / total < 0.01 and not advised):
            continue
        hot = [ln for ln, ls in by_file[f].items() if ls.samples / total >= MIN_LINE_SHARE] + advised
        if f == k.file and k.line:
            hot.append(k.line)
        spans = _windows(hot, len(text))
        if not spans:
            continue
        shown_any = True
        out.append(f'<div class="muted"><code>{_e(f)}</code> &middot; {_pct(samples / total)} of the kernel</div>')
        out.append(f'<table class="src" data-file="{_e(_short(f))}">')
        prev = 0
        for lo, hi in spans:
            if lo > prev + 1:
                out.append(f'<tr class="gap"><td colspan="4">&hellip; lines {prev + 1}-{lo - 1} &hellip;</td></tr>')
            for ln in range(lo, hi + 1):
                out.append(_source_row(i, k, f, ln, text[ln - 1], by_file[f].get(ln), notes.get((f, ln), ()),
                                       total, top))
            prev = hi
        if prev < len(text):
            out.append(f'<tr class="gap"><td colspan="4">&hellip; lines {prev + 1}-{len(text)} &hellip;</td></tr>')
        out.append("</table>")
    if not shown_any:
        out.append("<p class='muted'>The sources were not found here (map them with --source-root OLD=NEW).</p>")
    return out


def _source_row(i: int, k: KernelReport, f: str, ln: int, code: str, ls: LineStats | None, advice, total: int,
                top: int) -> str:
    n = ls.samples if ls else 0
    heat = n / top if top else 0.0
    bg = f' style="background:rgba(228,87,46,{0.06 + 0.5 * heat:.3f})"' if n and n / total >= MIN_LINE_SHARE else ""
    tip = ""
    if ls and ls.by_reason:
        own = ls.samples or 1
        tip = ", ".join(f"{r} {_pct(c / own)}" for r, c in ls.by_reason[:4])
    heat_cell = (f'<span class="pct">{_pct(n / total)}</span><span class="hbar" style="width:{max(2.0, 48 * heat):.0f}px">'
                 "</span>" if n and n / total >= MIN_LINE_SHARE else "")
    tags = "".join(f'<span class="tag">{_e(a.title)}: {_e(_estimate_text(a))}</span>' for a in advice)
    cls = ' class="advised"' if advice else ""
    return (f'<tr id="k{i}-L{_e(_anchor(f, ln))}" data-line="{ln}" data-samples="{n}"{cls}>'
            f'<td class="no">{ln}</td><td class="heat" title="{_e(tip)}">{heat_cell}</td>'
            f'<td class="code"{bg}>{_e(code.rstrip())}</td><td class="note">{tags}</td></tr>')


def hot_region(k: KernelReport) -> tuple[str, int, int] | None:
    """(file, first line, last line) of the hot region: the top advice's region, else the hottest line."""
    for a in k.advice:
        for r in a.regions:
            if r.file and r.line_range[0]:
                return r.file, r.line_range[0], r.line_range[1]
    if not k.lines:
        return None
    ls = max(k.lines, key=lambda s: s.samples)
    return ls.file, ls.line, ls.line


def _sass(k: KernelReport) -> list[str]:
    region = hot_region(k)
    if region is None:
        return []
    f, lo, hi = region
    rows = sorted(((off, text, n, ls.line) for ls in k.lines if ls.file == f and lo <= ls.line <= hi
                   for off, text, n in ls.instructions), key=lambda r: r[0])
    if not rows:
        return []
    hidden = 0
    if len(rows) > MAX_SASS:         # the window of MAX_SASS instructions around the hottest
        hottest = max(range(len(rows)), key=lambda j: rows[j][2])
        start = max(0, min(hottest - MAX_SASS // 2, len(rows) - MAX_SASS))
        hidden = len(rows) - MAX_SASS
        rows = rows[start:start + MAX_SASS]
    top = max(r[2] for r in rows) or 1
    total = k.samples or 1
    out = [f"<h3>SASS of the hot region ({_e(_short(f))}:{lo}" + (f"-{hi}" if hi != lo else "") + ")</h3>",
           '<table class="sass"><tr><th>offset</th><th>line</th><th>instruction</th><th>samples</th></tr>']
    for off, text, n, ln in rows:
        bg = f' style="background:rgba(228,87,46,{0.06 + 0.5 * n / top:.3f})"' if n else ""
        out.append(f'<tr data-offset="{off}"><td class="off">/*{off:04x}*/</td><td class="ln">{ln}</td>'
                   f'<td{bg}>{_e(text)}</td><td class="n" title="{_pct(n / total)} of the kernel">'
                   f"{n:,}</td></tr>" if n else
                   f'<tr data-offset="{off}"><td class="off">/*{off:04x}*/</td><td class="ln">{ln}</td>'
                   f'<td>{_e(text)}</td><td class="n"></td></tr>')
    out.append("</table>")
    if hidden:
        out.append(f'<p class="muted">{hidden} colder instructions of the region not shown.</p>')
    return out
