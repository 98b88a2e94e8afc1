"""Presenting a Report: text (text_report.py), JSON, SARIF 2.1.0."""

from __future__ import annotations

from typing import Any

from .model import Report, to_json
from .sources import LineReader

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_text(report: Report, *, reader: LineReader | None = None, kernel: str | None = None,
                top: int | None = None, min_speedup: float | None = None) -> str:
    """The report for a person: see :mod:`gpa_lsp.analysis.text_report`."""
    from .text_report import render_text as render
    return render(report, reader=reader, kernel=kernel, top=top, min_speedup=min_speedup)


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
                "level": "warning" if a.effective_speedup >= 1.10 else "note",
                "message": {"text": f"{a.title}: estimated speedup {a.estimated_speedup:.2f}x "
                                    + (f"({a.verification.summary(short_device(a.verification.device))}) "
                                       if a.verification is not None else "")
                                    + (f"({a.bound_text()}) " if a.bounded_by else "")
                                    + f"(ratio {a.ratio * 100:.1f}%) in {k.demangled or k.name}. {a.suggestion}"},
                "properties": {"estimatedSpeedup": a.estimated_speedup, "ratio": a.ratio, "kernel": k.name,
                               **({"estimateLow": a.estimate_low, "estimateHigh": a.estimate_high}
                                  if a.estimate_low is not None else {}),
                               **({"boundedBy": a.bounded_by, "boundedSharePct": a.bounded_pct}
                                  if a.bounded_by else {}),
                               **({"verification": a.verification.status,
                                   "measuredSpeedup": a.verification.speedup,
                                   "measuredLow": a.verification.low, "measuredHigh": a.verification.high,
                                   "measuredOn": a.verification.device,
                                   "reEstimatedSpeedup": a.verification.static_speedup}
                                  if a.verification is not None else {})},
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


def _uri(path: str) -> str:
    from pathlib import Path
    p = Path(path)
    return p.as_uri() if p.is_absolute() else path
