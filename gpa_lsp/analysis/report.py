"""Presenting a Report: GPA-style text with source snippets, JSON, SARIF 2.1.0."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from ..profile.throughput import describe as describe_units
from .model import Advice, KernelReport, Report, to_json
from .sources import LineReader, make_reader, source_line

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _short(path: str) -> str:
    return os.path.basename(path) if path else "?"


def _snippet(reader: LineReader, file: str, line: int) -> str:
    text = source_line(reader, file, line)
    return text.strip() if text else ""


def render_text(report: Report, *, reader: LineReader | None = None, kernel: str | None = None) -> str:
    reader = reader or make_reader()
    out: list[str] = []
    dev = report.device
    out.append(f"GPA advice for {report.source or 'profile'} ({report.collector}, {dev.get('name', '?')}, "
               f"{report.total_samples} samples)")
    for k in report.kernels:
        if kernel and kernel not in (k.name, k.demangled) and kernel not in k.demangled:
            continue
        out.append("")
        out.append(_kernel_header(k))
        if not k.advice:
            out.append("  no optimization is estimated to help by 0.5% or more")
        for a in k.advice:
            out.extend(_advice_lines(a, reader))
    return "\n".join(out) + "\n"


def _kernel_header(k: KernelReport) -> str:
    where = f" at {_short(k.file)}:{k.line}" if k.file else ""
    time = f", {k.duration_ns / 1000:.1f} us/launch" if k.duration_ns else ""
    top = ", ".join(f"{c} {n / k.samples:.0%}" for c, n in k.stall_breakdown[:4]) if k.samples else ""
    units = f"\n  units (share of peak): {describe_units(k.throughput)}" if k.throughput else ""
    return (f"Kernel {k.demangled or k.name}{where}: {k.samples} samples ({k.share:.0%} of all){time}, "
            f"limited by {k.limiter}\n  stalls: {top}{units}")


def _advice_lines(a: Advice, reader: LineReader) -> list[str]:
    bound = f" ({a.bound_text()})" if a.bounded_by else ""
    lines = [f"  Apply {a.title}, ratio {a.ratio * 100:.2f}%, estimate speedup {a.estimated_speedup:.2f}x{bound}"]
    lines.append(f"    {a.suggestion}")
    if a.fix is not None:
        where = f" at {_short(a.fix.file)}:{a.fix.line}" if a.fix.file and a.fix.line else ""
        lines.append(f"    fix: {a.fix.kind}{where} {a.fix.params}")
    for r in a.regions:
        lines.append(f"    Hot {r.kind} {r.name} ({_short(r.file)}:{r.line_range[0]}-{r.line_range[1]}), "
                     f"ratio {r.ratio * 100:.2f}%")
        for h in r.hotspots:
            d, u = h.def_, h.use
            lines.append(f"      {_short(d.file)}:{d.line} -> {_short(u.file)}:{u.line}  {h.reason or 'self'}, "
                         f"distance {h.distance}, ratio {h.ratio * 100:.2f}%")
            snip = _snippet(reader, d.file, d.line)
            if snip:
                lines.append(f"        {d.line:>5} | {snip}")
            if (u.file, u.line) != (d.file, d.line):
                snip = _snippet(reader, u.file, u.line)
                if snip:
                    lines.append(f"        {u.line:>5} | {snip}")
    return lines


def to_json_report(report: Report, *, kernel: str | None = None) -> dict[str, Any]:
    """``{"device": {...}, "kernels": [{"name": ..., "advice": [...]}]}`` (def spelled "def")."""
    data = to_json(report)
    if kernel:
        data["kernels"] = [k for k in data["kernels"] if kernel in (k["name"], k["demangled"]) or kernel in k["demangled"]]
    return data


def to_sarif(report: Report, *, kernel: str | None = None) -> dict[str, Any]:
    """SARIF 2.1.0: one rule per optimizer, one result per advice on its diagnostic line."""
    from .optimizers import REGISTRY

    rules = [{"id": o.id, "name": o.title.replace(" ", ""), "shortDescription": {"text": o.title},
              "fullDescription": {"text": o.suggestion}} for o in REGISTRY]
    index = {o.id: i for i, o in enumerate(REGISTRY)}
    results = []
    for k in report.kernels:
        if kernel and kernel not in (k.name, k.demangled) and kernel not in k.demangled:
            continue
        for a in k.advice:
            loc = a.location
            res: dict[str, Any] = {
                "ruleId": a.optimizer, "ruleIndex": index.get(a.optimizer, -1),
                "level": "warning" if a.estimated_speedup >= 1.10 else "note",
                "message": {"text": f"{a.title}: estimated speedup {a.estimated_speedup:.2f}x "
                                    + (f"({a.bound_text()}) " if a.bounded_by else "")
                                    + f"(ratio {a.ratio * 100:.1f}%) in {k.demangled or k.name}. {a.suggestion}"},
                "properties": {"estimatedSpeedup": a.estimated_speedup, "ratio": a.ratio, "kernel": k.name,
                               **({"estimateLow": a.estimate_low, "estimateHigh": a.estimate_high}
                                  if a.estimate_low is not None else {}),
                               **({"boundedBy": a.bounded_by, "boundedSharePct": a.bounded_pct}
                                  if a.bounded_by else {})},
            }
            if loc is not None and loc.file:
                res["locations"] = [{"physicalLocation": {
                    "artifactLocation": {"uri": _uri(loc.file)},
                    "region": {"startLine": max(1, loc.line)}}}]
                related = []
                for n, h in enumerate(a.hotspots):
                    if h.use.file:
                        related.append({"id": n, "message": {"text": f"stall seen here ({h.reason or 'self'}, "
                                                                      f"{h.ratio * 100:.1f}%)"},
                                        "physicalLocation": {"artifactLocation": {"uri": _uri(h.use.file)},
                                                             "region": {"startLine": max(1, h.use.line)}}})
                if related:
                    res["relatedLocations"] = related
            results.append(res)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "gpa-lsp",
                                          "rules": rules}},
                      "results": results}]}


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float made ``None``: JSON has no Infinity, and an unbounded
    estimate (a range with no upper end) is "unknown" to a reader of the JSON, not a number."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def json_text(data: Any) -> str:
    """The JSON (or SARIF) text ``gpa analyze`` writes: strict JSON, never ``Infinity`` or ``NaN``."""
    return json.dumps(finite(data), indent=1, allow_nan=False)


def _uri(path: str) -> str:
    from pathlib import Path
    p = Path(path)
    return p.as_uri() if p.is_absolute() else path
