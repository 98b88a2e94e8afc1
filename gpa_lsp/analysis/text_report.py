"""The text report, written for a person reading a terminal (100 columns).

One block per kernel (short name, its full signature once, time per launch,
where its stall samples went) and one numbered block per advice: the estimate
and its range (and the measured speedup once a change was verified), what share
of the kernel's stall samples the advice explains, the fix as a sentence, and
where the stalls are -- each distinct instruction by SASS opcode and offset,
with the source lines they come from. Stall reasons carry the names the hover
uses (CUPTI's: ``long_scoreboard``, ``mio_throttle``, ``barrier``, ...).
"""

from __future__ import annotations

import os
import re
import textwrap
from collections import defaultdict
from dataclasses import replace
from typing import Any

from ..config import RECOMMENDED
from ..profile.demangle import display_name
from ..profile.reasons import category
from ..profile.throughput import describe as describe_units
from ..verify.model import short_device
from .model import Advice, ChangeKind, Hotspot, KernelReport, Report
from .quickfix import describe_fix, fix_edits
from .sources import LineReader, make_reader, source_line

WIDTH = 100
MAX_SPOTS = 3          # distinct instructions shown per advice
MAX_SNIPPETS = 2       # source lines quoted per advice


def kernel_matches(k: KernelReport, kernel: str | None) -> bool:
    return not kernel or kernel in (k.name, k.demangled) or kernel in (k.demangled or "")


def select(report: Report, *, kernel: str | None = None, top: int | None = None,
           min_speedup: float | None = None) -> Report:
    """The report with only ``kernel``'s kernels and, per kernel, the first ``top`` advice estimated
    at ``min_speedup`` or more (every output format applies the same selection)."""
    kernels = []
    for k in report.kernels:
        if not kernel_matches(k, kernel):
            continue
        adv = [a for a in k.advice if min_speedup is None or speedup_of(a) >= min_speedup]
        if top is not None:
            adv = adv[:max(0, top)]
        kernels.append(replace(k, advice=tuple(adv)))
    return replace(report, kernels=tuple(kernels))


def speedup_of(a: Advice) -> float:
    """What ranks the advice: measured, else re-estimated, else estimated (``Advice.effective_speedup``)."""
    return float(getattr(a, "effective_speedup", a.estimated_speedup))


def short_name(k: KernelReport) -> str:
    """The kernel's name as the reports show it (``demangle.display_name``)."""
    return display_name(k.demangled or k.name) or k.name


def _short(path: str | None) -> str:
    return os.path.basename(path) if path else "?"


def _pct(x: float) -> str:
    """A share, with the precision a person needs: 26%, 4.9%, 0.31%."""
    v = x * 100
    if v >= 10 or v == 0:
        return f"{v:.0f}%"
    if v >= 1:
        return f"{v:.1f}%"
    return f"{v:.2f}%"


def _device_short(name: str) -> str:
    """``H100`` for ``NVIDIA H100 80GB HBM3``."""
    words = [w for w in (name or "").replace("NVIDIA", "").split() if not re.fullmatch(r"\d+GB|HBM\d\w*|PCIe|SXM\d*", w)]
    return " ".join(words) or name or "?"


def kernel_reasons(k: KernelReport) -> list[tuple[str, int]]:
    """Samples by stall reason (the hover's names), summed over the kernel's lines."""
    out: dict[str, int] = defaultdict(int)
    for ls in k.lines:
        for r, n in ls.by_reason:
            out[r] += n
    return sorted(out.items(), key=lambda rn: -rn[1])


def _sass_index(k: KernelReport) -> dict[int, str]:
    return {off: text for ls in k.lines for off, text, _ in ls.instructions}


def _opcode(text: str | None) -> str:
    if not text:
        return "?"
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].rstrip(";") if words else "?"


def reason_at(k: KernelReport, hs: Hotspot, line_reasons: dict) -> str:
    """The hover's name for a hotspot's stall: the use line's most frequent raw reason in the
    hotspot's GPA category (the blame keeps only the category)."""
    cat = hs.reason or ""
    best = None
    for r, n in line_reasons.get((hs.use.file, hs.use.line), ()):
        if category(r) == cat and (best is None or n > best[1]):
            best = (r, n)
    return best[0] if best else (cat.replace("_", " ") or "stall")


def render_text(report: Report, *, reader: LineReader | None = None, kernel: str | None = None,
                top: int | None = None, min_speedup: float | None = None, width: int = WIDTH) -> str:
    reader = reader or make_reader()
    out: list[str] = []
    dev = report.device or {}
    source = report.source or "profile"
    try:
        rel = os.path.relpath(source)
        source = rel if not rel.startswith("..") else source
    except ValueError:
        pass
    out.append(f"GPA advice from {source}")
    out.append(f"  {report.collector}, {dev.get('name', '?')}, {report.total_samples:,} samples")
    chosen = select(report, kernel=kernel, top=top, min_speedup=min_speedup)
    full = {k.name: k for k in report.kernels}
    for k in chosen.kernels:
        out.append("")
        out.extend(_kernel_lines(k, width))
        if not k.advice:
            why = f" by {min_speedup:.2f}x or more" if min_speedup else " by 0.5% or more"
            out.append(f"  No change is estimated to speed it up{why}.")
        elif k.advice[0].marginal:
            out.extend(_wrap(MARGINAL_KERNEL, width, "  ", "  "))
        for n, a in enumerate(k.advice, 1):
            out.append("")
            out.extend(_advice_lines(n, a, k, reader, width))
        hidden = len(full[k.name].advice) - len(k.advice)
        if hidden:
            out.append("")
            out.append(f"  ({hidden} more advice not shown: see --top and --min-speedup)")
    if not chosen.kernels:
        out.append("")
        out.append(f"No kernel matches {kernel!r}." if kernel else "No kernel was profiled.")
    return "\n".join(out) + "\n"


def _kernel_lines(k: KernelReport, width: int) -> list[str]:
    name = short_name(k)
    where = f" ({_short(k.file)}:{k.line})" if k.file and k.line else ""
    facts = []
    if k.duration_ns:
        facts.append(f"{k.duration_ns / 1000:,.1f} us per launch")
    facts.append(f"{k.samples:,} samples ({_pct(k.share)} of the profile)")
    facts.append(f"limited by {k.limiter.replace('_', ' ')}")
    lines = _wrap(f"Kernel {name}{where}: " + ", ".join(facts), width, "", "  ")
    full = k.demangled or k.name
    if full != name:
        lines += _wrap(full, width, "  ", "    ")
    reasons = kernel_reasons(k)
    total = sum(n for _, n in reasons) or k.samples or 1
    if reasons:
        shown = ", ".join(f"{r} {_pct(n / total)}" for r, n in reasons[:5])
        lines += _wrap(f"samples by stall reason: {shown}", width, "  ", "    ")
    if k.throughput:
        lines += _wrap(f"units (share of peak): {describe_units(k.throughput)}", width, "  ", "    ")
    return lines


MARGINAL_KERNEL = (f"Nothing here is estimated to gain {RECOMMENDED:.2f}x or more: under that the estimates' "
                   "own error is as large as the gain, so the advice below is marginal, not recommended.")


def marginal_text(a: Advice) -> str:
    """``, marginal`` (``, marginal: 1.046x`` where two decimals would round it up to the threshold)."""
    if not a.marginal:
        return ""
    x = speedup_of(a)
    return f", marginal: {x:.3f}x" if f"{x:.2f}" == f"{RECOMMENDED:.2f}" else ", marginal"


def _estimate_text(a: Advice) -> str:
    """``est. 1.35x (1.14-1.56x)``, or ``measured 1.31x (1.28-1.34), est. 1.27x, H100`` once timed."""
    v = getattr(a, "verification", None)
    if v is not None and getattr(v, "status", "") == "measured" and v.speedup is not None:
        return v.summary(short_device(v.device or ""))
    est = f"est. {a.estimated_speedup:.2f}x"
    if a.estimate_low is not None and a.estimate_high is not None \
            and f"{a.estimate_low:.2f}" != f"{a.estimate_high:.2f}":
        est += f" ({a.estimate_low:.2f}-{a.estimate_high:.2f}x)"
    return est


def _tried_text(a: Advice) -> str:
    """What a verification that timed nothing found (``compiled: re-estimated 1.20x ...``), else ''."""
    v = getattr(a, "verification", None)
    if v is None or (getattr(v, "status", "") == "measured" and v.speedup is not None):
        return ""
    text = v.summary(short_device(v.device or ""))
    return text[:1].upper() + text[1:] + "."


def _confidence_text(a: Advice) -> str:
    if not getattr(a, "low_confidence", False):
        return ""
    lo, hi = a.sampling_interval
    return f"({a.confidence_text()}: the sampling alone allows {lo:.2f}-{hi:.2f}x)"


def _advice_lines(n: int, a: Advice, k: KernelReport, reader: LineReader, width: int) -> list[str]:
    ind = "     "
    loc = a.location
    where = f" at {_short(loc.file)}:{loc.line}" if loc is not None and loc.file and loc.line else ""
    head = f"  {n}. {a.title}{where}: {_estimate_text(a)}" + marginal_text(a)
    lines = _wrap(head, width, "", ind)
    if a.bounded_by:
        lines += _wrap(f"({a.bound_text()})", width, ind, ind)
    for extra in (_tried_text(a), _confidence_text(a)):
        if extra:
            lines += _wrap(extra, width, ind, ind)
    if a.kind == ChangeKind.parallel:
        explains = "A launch change: estimated from occupancy and the grid, not from particular stalls."
    else:
        region = _region_phrase(a)
        region = f", most {region}" if region else ""
        if a.hides_latency:
            explains = (f"Explains {_pct(a.ratio)} of the kernel's samples (stalls on these instructions "
                        f"while no warp could issue, which the change can hide){region}.")
        else:
            explains = (f"Explains {_pct(a.ratio)} of the kernel's stall samples (the stalls the change "
                        f"removes){region}.")
    lines += _wrap(explains + " " + a.suggestion.strip(), width, ind, ind)
    if a.fix is not None:
        cache: dict[str, Any] = {}

        def edits():
            if "e" not in cache:
                got = fix_edits(a.fix, reader)
                cache["e"] = got[1] if got else None
            return cache["e"]

        lines += _wrap("Fix: " + _keep_code(describe_fix(a.fix, reader, edits=edits)) + ".", width, ind, ind + "  ")
    lines += _hotspot_lines(a, k, reader, width, ind)
    return lines


def _region_phrase(a: Advice) -> str:
    if not a.regions:
        return ""
    r = a.regions[0]
    lo, hi = r.line_range
    span = f"{_short(r.file)}:{lo}" + (f"-{hi}" if hi and hi != lo else "")
    if r.kind == "loop":
        return f"in the loop at {span}"
    if r.kind == "function":
        return f"in {r.name} (called at {span})"
    return ""


def _hotspot_lines(a: Advice, k: KernelReport, reader: LineReader, width: int, ind: str) -> list[str]:
    if not a.hotspots:
        return []
    sass = _sass_index(k)
    line_reasons = {(ls.file, ls.line): ls.by_reason for ls in k.lines}
    # one row per (reason, stalled instruction kind and line, waited-for instruction kind and line);
    # the offsets tell the copies apart
    rows: dict[tuple, list] = {}
    for h in a.hotspots:
        u, d = h.use, h.def_
        same = (u.offset == d.offset and u.file == d.file and u.line == d.line)
        key = (reason_at(k, h, line_reasons), u.file, u.line, _opcode(sass.get(u.offset)),
               None if same else (d.file, d.line, _opcode(sass.get(d.offset))))
        row = rows.setdefault(key, [0.0, [], []])
        row[0] += h.ratio
        if u.offset is not None and u.offset not in row[1]:
            row[1].append(u.offset)
        if not same and d.offset is not None and d.offset not in row[2]:
            row[2].append(d.offset)
    ordered = sorted(rows.items(), key=lambda kv: -kv[1][0])
    out = [f"{ind}Where the stalls are (share of the kernel's samples):"]
    quoted: list[tuple[str, int]] = []
    for (reason, ufile, uline, uop, dkey), (ratio, uoffs, doffs) in ordered[:MAX_SPOTS]:
        text = f"{_pct(ratio):>6}  {reason}: {uop} {_offsets(uoffs)} (line\xa0{uline})"
        if dkey is not None:
            dfile, dline, dop = dkey
            dwhere = f"line\xa0{dline}" if dfile == ufile else f"{_short(dfile)}:{dline}"
            text += f" waits for {dop} {_offsets(doffs)} ({dwhere})"
            if (dfile, dline) not in quoted:
                quoted.append((dfile, dline))
        if (ufile, uline) not in quoted:
            quoted.append((ufile, uline))
        out += _wrap(text, width, ind + "  ", ind + "          ")
    if len(ordered) > MAX_SPOTS:
        rest = sum(r[0] for _, r in ordered[MAX_SPOTS:])
        more = len(ordered) - MAX_SPOTS
        out.append(f"{ind}  {_pct(rest):>6}  at {more} more instruction{'s' if more > 1 else ''}")
    for file, line in sorted(quoted[:MAX_SNIPPETS], key=lambda fl: (fl[0] != (a.location.file if a.location else ""), fl[1])):
        snip = source_line(reader, file, line)
        if snip is None:
            continue
        prefix = f"{ind}  {line:>5} | "
        body = snip.strip()
        room = width - len(prefix)
        if len(body) > room:
            body = body[:room - 3] + "..."
        out.append(prefix + body)
    return out


def _offsets(offs: list[int]) -> str:
    if not offs:
        return ""
    shown = ", ".join(f"0x{o:04x}" for o in offs[:3])
    more = f" +{len(offs) - 3}" if len(offs) > 3 else ""
    return f"at {shown}{more}"


def _keep_code(text: str) -> str:
    """`code spans` kept on one line when wrapped (short ones: a long one may still break)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return text
    return "`".join(p.replace(" ", "\xa0") if i % 2 and len(p) <= 40 else p for i, p in enumerate(parts))


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """Wrapped at spaces; a no-break space (\\xa0) keeps "line 34" together."""
    got = textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=rest,
                        break_long_words=True, break_on_hyphens=False) or [first.rstrip()]
    return [ln.replace("\xa0", " ") for ln in got]
