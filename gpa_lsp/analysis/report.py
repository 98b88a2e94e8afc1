"""Presenting a Report: text (text_report.py), JSON, SARIF 2.1.0 (sarif.py)."""

from __future__ import annotations

import json
import math
from typing import Any

from . import sarif, text_report
from .model import Report, dump_report
from .sarif import SARIF_SCHEMA  # noqa: F401  (re-exported)
from .sources import LineReader


def render_text(report: Report, *, reader: LineReader | None = None, kernel: str | None = None,
                top: int | None = None, min_speedup: float | None = None) -> str:
    """The report for a person: see :mod:`gpa_lsp.analysis.text_report`."""
    return text_report.render_text(report, reader=reader, kernel=kernel, top=top, min_speedup=min_speedup)


def to_json_report(report: Report, *, kernel: str | None = None) -> dict[str, Any]:
    """``{"device": {...}, "kernels": [{"name": ..., "advice": [...]}]}`` (def spelled "def")."""
    data = dump_report(report)
    if kernel:
        data["kernels"] = [k for k in data["kernels"] if kernel in (k["name"], k["demangled"]) or kernel in k["demangled"]]
    return data


def to_sarif(report: Report, *, kernel: str | None = None, srcroot=None, reader: LineReader | None = None,
             config_file: str | None = None) -> dict[str, Any]:
    """SARIF 2.1.0: see :mod:`gpa_lsp.analysis.sarif`."""
    return sarif.to_sarif(report, kernel=kernel, srcroot=srcroot, reader=reader, config_file=config_file)


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


