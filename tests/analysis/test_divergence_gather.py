"""Warp Divergence on a divergent gather loop: what converging buys (optimizers/warp_divergence.py,
``latency_growth`` in analysis/coalescing.py).

The probe (benchmarks/coalescing, ``div_a*``: A active lanes walk a list, an index load and a
gather per entry) measured on the H100 that converging from 1 to 32 lanes buys 9x, not 32x: each
converged iteration gathers every lane's sectors and takes longer. The model prices the matched
memory waits of divergent uses by that curve; these checks hold it to the probe's own numbers, and
to a calibration case whose divergence is arithmetic (no gathers: unchanged).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.coalescing import gather_latency, latency_growth
from gpa_lsp.analysis.optimizers.warp_divergence import _converged_gather_weight
from gpa_lsp.profile.model import PCStats

ROOT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"


def _div_rows(warps: int) -> dict[int, dict]:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return {r["active_lanes"]: r for r in d["devices"][H100]["divergence"] if r["warps_per_sm"] == warps}


def test_a_converged_gather_iteration_takes_longer():
    pts = gather_latency(H100)
    assert [s for s, _ in pts] == sorted(s for s, _ in pts) and pts[0] == (1.0, 1.0)
    assert all(b[1] > a[1] for a, b in zip(pts, pts[1:]))           # more sectors, longer iterations
    assert 2.5 < pts[-1][1] < 5.0                                    # 32 lanes: ~3.5x one lane's
    assert latency_growth(H100, 1.0, 1000.0) == pytest.approx(pts[-1][1] / pts[0][1])   # flat beyond
    assert latency_growth("Some GPU", 1.0, 32.0) == 1.0


def test_the_weight_reproduces_the_probes_speedup():
    """One active lane of 32 (1 sector per request): the model keeps 1/32 x growth of the wait, so
    converging is worth what the probe measured at its fewest warps per SM."""
    rows = _div_rows(8)
    measured = rows[1]["duration_ns"] / rows[32]["duration_ns"]
    load = PCStats("x", "f", 0, (), (), executed=1000, sectors=1000)
    w = _converged_gather_weight(SimpleNamespace(device=SimpleNamespace(name=H100)), load, 31 / 32)
    assert 1.0 / (1.0 - w) == pytest.approx(measured, rel=0.1)
    assert 6.0 < measured < 12.0                                     # not 32x


def test_without_sector_counts_the_inactive_share_stays():
    ctx = SimpleNamespace(device=SimpleNamespace(name=H100))
    assert _converged_gather_weight(ctx, PCStats("x", "f", 0, (), (), executed=10), 0.75) == 0.75
    assert _converged_gather_weight(ctx, None, 0.75) == 0.75


def test_arithmetic_divergence_keeps_its_estimate():
    """parity_divergence (calibration): the divergent paths are arithmetic, issue-bound (achieved
    1.95x): no gather waits, the estimate stays at ~2x."""
    report = advise_bundle(ROOT / "kernels" / "parity_divergence" / "recorded" / "ncu.gpabundle")
    a = next(a for a in report.kernels[0].advice if a.optimizer == "warp_divergence")
    assert 1.8 < a.estimated_speedup < 2.2
