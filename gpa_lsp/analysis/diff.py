"""Two recordings side by side (``gpa diff A B``): what a change did to each kernel.

Per kernel: the time per launch, where the samples went by stall reason, and
per source line what grew, what shrank and what vanished. The two recordings
may sample at different rates, so counts are not compared directly: each line's
(or reason's) share of its kernel's samples is multiplied by the kernel's time
per launch, giving "microseconds per launch spent there" in both (or the share
alone when a recording has no launch times). Lines of A are paired with lines
of B by aligning the two source texts (difflib), so a change that adds or
removes lines -- or a B recorded from another file (improved.cu) -- still
compares like with like.
"""

from __future__ import annotations

import difflib
import os
from collections import defaultdict
from typing import Any

from .model import KernelReport, Report
from .sources import LineReader, make_reader, source_line
from .text_report import _pct, short_name

MIN_CHANGE = 0.01        # of A's kernel time: smaller line/reason changes are noise
VANISHED = 0.10          # what is left of a line's time when it counts as gone


# ---- comparing --------------------------------------------------------------------------------

def _kernel_key(k: KernelReport) -> str:
    return short_name(k)


def _pairs(a: Report, b: Report) -> list[tuple[KernelReport | None, KernelReport | None]]:
    left = list(a.kernels)
    right = list(b.kernels)
    out = []
    for ka in left:
        kb = next((k for k in right if k.name == ka.name), None) \
            or next((k for k in right if _kernel_key(k) == _kernel_key(ka)), None)
        if kb is not None:
            right.remove(kb)
        out.append((ka, kb))
    out += [(None, kb) for kb in right]
    return out


def _value(n: float, k: KernelReport, total: float, timed: bool) -> float:
    share = n / total if total else 0.0
    return share * k.duration_ns if timed else share


def _change(a: float, b: float, scale: float, min_change: float) -> str:
    delta = b - a
    if abs(delta) < min_change * scale:
        return "same"
    if a > 0 and b <= VANISHED * a:
        return "vanished"
    if a <= 0:
        return "new"
    return "grew" if delta > 0 else "shrank"


def _line_reasons(k: KernelReport) -> dict[tuple[str, int], dict[str, int]]:
    out: dict[tuple[str, int], dict[str, int]] = {}
    for ls in k.lines:
        if ls.samples:
            out[(ls.file, ls.line)] = dict(ls.by_reason)
    return out


def _align(a_lines: list[str] | None, b_lines: list[str] | None) -> dict[int, int]:
    """1-based line of A -> line of B: equal lines, and changed lines paired in order."""
    if a_lines is None or b_lines is None:
        return {}
    sm = difflib.SequenceMatcher(None, [l.strip() for l in a_lines], [l.strip() for l in b_lines], autojunk=False)
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or tag == "replace":
            for d in range(min(i2 - i1, j2 - j1)):
                out[i1 + d + 1] = j1 + d + 1
    return out


def _file_pairs(ka: KernelReport, kb: KernelReport, a_files: set[str], b_files: set[str]) -> dict[str, str | None]:
    """File of A -> file of B: the kernels' own files, else the same path, else the same name."""
    out: dict[str, str | None] = {}
    for fa in a_files:
        if ka.file and kb.file and fa == ka.file:
            out[fa] = kb.file
        elif fa in b_files:
            out[fa] = fa
        else:
            out[fa] = next((fb for fb in sorted(b_files) if os.path.basename(fb) == os.path.basename(fa)), None)
    return out


def diff_kernel(ka: KernelReport | None, kb: KernelReport | None, *, reader_a: LineReader, reader_b: LineReader,
                min_change: float = MIN_CHANGE) -> dict[str, Any]:
    def side(k: KernelReport | None) -> dict[str, Any] | None:
        if k is None:
            return None
        return {"name": k.demangled or k.name, "mangled": k.name, "duration_ns": k.duration_ns,
                "samples": k.samples, "launches": k.launches, "file": k.file, "line": k.line}

    ref = ka or kb
    out: dict[str, Any] = {"name": short_name(ref), "a": side(ka), "b": side(kb)}
    if ka is None or kb is None:
        out.update(speedup=None, unit=None, reasons=[], lines=[])
        return out
    timed = bool(ka.duration_ns and kb.duration_ns)
    out["speedup"] = round(ka.duration_ns / kb.duration_ns, 4) if timed else None
    out["unit"] = "ns_per_launch" if timed else "share_of_samples"
    la, lb = _line_reasons(ka), _line_reasons(kb)
    ta = sum(sum(r.values()) for r in la.values()) or ka.samples or 1
    tb = sum(sum(r.values()) for r in lb.values()) or kb.samples or 1
    scale = (ka.duration_ns if timed else 1.0) or 1.0

    # by stall reason
    ra: dict[str, int] = defaultdict(int)
    rb: dict[str, int] = defaultdict(int)
    for r in la.values():
        for k, n in r.items():
            ra[k] += n
    for r in lb.values():
        for k, n in r.items():
            rb[k] += n
    reasons = []
    for reason in set(ra) | set(rb):
        va, vb = _value(ra.get(reason, 0), ka, ta, timed), _value(rb.get(reason, 0), kb, tb, timed)
        reasons.append({"reason": reason, "a_samples": ra.get(reason, 0), "b_samples": rb.get(reason, 0),
                        "a": round(va, 3), "b": round(vb, 3), "delta": round(vb - va, 3),
                        "change": _change(va, vb, scale, min_change)})
    reasons.sort(key=lambda r: -abs(r["delta"]))
    out["reasons"] = reasons

    # per line
    files = _file_pairs(ka, kb, {f for f, _ in la}, {f for f, _ in lb})
    maps = {fa: _align(reader_a(fa), reader_b(fb)) if fb else {} for fa, fb in files.items()}
    used_b: set[tuple[str, int]] = set()
    rows = []
    for (fa, line), reasons_a in la.items():
        fb = files.get(fa)
        lb_no = maps.get(fa, {}).get(line) if fb else None
        if fb and lb_no is None and not maps.get(fa) and reader_a(fa) is None:
            lb_no = line                        # no source to align: same line number
        key_b = (fb, lb_no) if fb and lb_no else None
        reasons_b = lb.get(key_b, {}) if key_b else {}
        if key_b:
            used_b.add(key_b)
        rows.append(_line_row((fa, line), key_b, reasons_a, reasons_b, ka, kb, ta, tb, timed, scale, min_change,
                              reader_a, reader_b))
    for key_b, reasons_b in lb.items():
        if key_b not in used_b:
            rows.append(_line_row(None, key_b, {}, reasons_b, ka, kb, ta, tb, timed, scale, min_change,
                                  reader_a, reader_b))
    rows.sort(key=lambda r: -abs(r["delta"]))
    out["lines"] = rows
    return out


def _line_row(key_a, key_b, reasons_a, reasons_b, ka, kb, ta, tb, timed, scale, min_change, reader_a, reader_b):
    na, nb = sum(reasons_a.values()), sum(reasons_b.values())
    va, vb = _value(na, ka, ta, timed), _value(nb, kb, tb, timed)
    by_reason = []
    for reason in set(reasons_a) | set(reasons_b):
        d = _value(reasons_b.get(reason, 0), kb, tb, timed) - _value(reasons_a.get(reason, 0), ka, ta, timed)
        by_reason.append({"reason": reason, "delta": round(d, 3)})
    by_reason.sort(key=lambda r: -abs(r["delta"]))

    def where(key, reader):
        if key is None:
            return None
        text = source_line(reader, key[0], key[1])
        return {"file": key[0], "line": key[1], "text": text.strip() if text is not None else None}

    return {"a": where(key_a, reader_a), "b": where(key_b, reader_b), "a_samples": na, "b_samples": nb,
            "a_value": round(va, 3), "b_value": round(vb, 3), "delta": round(vb - va, 3),
            "change": _change(va, vb, scale, min_change), "reasons": by_reason}


def diff_reports(a: Report, b: Report, *, reader_a: LineReader | None = None, reader_b: LineReader | None = None,
                 kernel: str | None = None, min_change: float = MIN_CHANGE) -> dict[str, Any]:
    """The comparison as plain data (the ``--json`` form)."""
    reader_a = reader_a or make_reader()
    reader_b = reader_b or make_reader()

    def rec(r: Report) -> dict[str, Any]:
        return {"bundle": r.source, "collector": r.collector, "device": (r.device or {}).get("name", ""),
                "total_samples": r.total_samples}

    kernels = []
    for ka, kb in _pairs(a, b):
        ref = ka or kb
        if kernel and not (kernel in (ref.name, ref.demangled) or kernel in (ref.demangled or "")):
            continue
        kernels.append(diff_kernel(ka, kb, reader_a=reader_a, reader_b=reader_b, min_change=min_change))
    return {"a": rec(a), "b": rec(b), "min_change": min_change, "kernels": kernels}


# ---- text ---------------------------------------------------------------------------------

def _fmt(v: float, unit: str | None) -> str:
    if unit == "ns_per_launch":
        return f"{v / 1000:,.1f}"
    return _pct(v)


def _signed(v: float, unit: str | None) -> str:
    if unit == "ns_per_launch":
        return f"{v / 1000:+,.1f}"
    return ("+" if v >= 0 else "-") + _pct(abs(v))


def render_diff_text(d: dict[str, Any], *, max_lines: int = 8, width: int = 100) -> str:
    def rel(p: str) -> str:
        try:
            r = os.path.relpath(p)
            return r if not r.startswith("..") else p
        except ValueError:
            return p

    out = ["gpa diff"]
    for tag in ("a", "b"):
        r = d[tag]
        out.append(f"  {tag.upper()}: {rel(r['bundle'] or '?')} ({r['collector']}, {r['device'] or '?'})")
    for k in d["kernels"]:
        out.append("")
        a, b, unit = k["a"], k["b"], k["unit"]
        if a is None or b is None:
            out.append(f"Kernel {k['name']}: only in {'B' if a is None else 'A'}")
            continue
        if k["speedup"]:
            faster = k["speedup"]
            how = f"{faster:.2f}x faster" if faster >= 1 else f"{1 / faster:.2f}x slower"
            out.append(f"Kernel {k['name']}: {a['duration_ns'] / 1000:,.1f} -> {b['duration_ns'] / 1000:,.1f} us "
                       f"per launch, {how} (samples {a['samples']:,} -> {b['samples']:,})")
        else:
            out.append(f"Kernel {k['name']}: no launch times in {'A' if not a['duration_ns'] else 'B'}; "
                       f"shares of the kernel's samples (samples {a['samples']:,} -> {b['samples']:,})")
        what = "us per launch" if unit == "ns_per_launch" else "share of the kernel's samples"
        out.append(f"  By stall reason ({what}, A -> B):")
        shown = [r for r in k["reasons"] if r["change"] != "same"][:6]
        for r in shown:
            out.append(f"    {r['reason']:<20} {_fmt(r['a'], unit):>9} -> {_fmt(r['b'], unit):>9}  "
                       f"{_signed(r['delta'], unit):>9}  {r['change']}")
        if not shown:
            out.append("    no reason changed by 1% of A's time or more")
        rows = [r for r in k["lines"] if r["change"] != "same"]
        fa = next((r["a"]["file"] for r in rows if r["a"]), a["file"])
        fb = next((r["b"]["file"] for r in rows if r["b"]), b["file"])
        out.append(f"  Lines that changed ({what}; A {os.path.basename(fa or '?')} -> B {os.path.basename(fb or '?')}):")
        for r in rows[:max_lines]:
            la = str(r["a"]["line"]) if r["a"] else "-"
            lb = str(r["b"]["line"]) if r["b"] else "-"
            why = ", ".join(f"{x['reason']} {_signed(x['delta'], unit)}" for x in r["reasons"][:2]
                            if abs(x["delta"]) > 0)
            head = (f"    {la:>5} -> {lb:<5} {_fmt(r['a_value'], unit):>9} -> {_fmt(r['b_value'], unit):>9}  "
                    f"{r['change']}: {why}")
            out.append(head[:width])
            for tag in ("a", "b"):
                side = r[tag]
                if side and side.get("text") and (tag == "a" or not r["a"] or r["a"].get("text") != side["text"]):
                    text = f"{'':>10}{tag.upper()} | {side['text']}"
                    out.append(text if len(text) <= width else text[:width - 3] + "...")
        if not rows:
            out.append("    no line changed by 1% of A's time or more")
        elif len(rows) > max_lines:
            out.append(f"    ({len(rows) - max_lines} more in --json)")
    if not d["kernels"]:
        out.append("")
        out.append("No kernel to compare.")
    return "\n".join(out) + "\n"
