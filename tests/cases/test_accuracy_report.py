"""Arithmetic of benchmarks/accuracy/report.py (unit test of the totals; rows are hand-made here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("accuracy_report", ROOT / "benchmarks" / "accuracy" / "report.py")
report = importlib.util.module_from_spec(spec)
sys.modules["accuracy_report"] = report  # dataclasses look their module up
spec.loader.exec_module(report)


def test_error_is_relative_to_the_achieved_speedup():
    row = report.Row("c", "fast_math", 1, 10, achieved=1.25, rank=1, estimate=1.5)
    assert abs(row.error - 0.2) < 1e-12
    assert report.Row("c", "fast_math", 1, 10, achieved=1.25).error is None


def test_totals_count_first_top3_and_mean_error():
    rows = [
        report.Row("a", "fast_math", 1, 1, achieved=2.0, rank=1, estimate=2.2),      # 10 %
        report.Row("b", "warp_balance", 1, 1, achieved=1.5, rank=3, estimate=1.2),   # 20 %
        report.Row("c", "loop_unrolling", 1, 1, achieved=1.2, note="optimizer not advised"),
        report.Row("d", "block_increase", 1, 1, note="no timing; no recorded/cupti.gpabundle"),
    ]
    text = report.render(rows, {"device": "NVIDIA H100 80GB HBM3", "cuda": "13.0.88", "date": "d", "runs": 20})
    assert "cases judged (timing and bundle present): 3 of 4" in text
    assert "optimizer ranked first: 1/3 = 33% (target ≥ 80%: not met)" in text
    assert "optimizer in the top three: 2/3\n" in text
    assert "mean estimate error: 15.0% over 2 cases (target ≤ 10%: not met)" in text
    assert "| b | warp_balance | 3 (want ≤ 1) | 1.20x | 1.50x | 20.0% |" in text
    assert "Not judged: d (no timing" in text
