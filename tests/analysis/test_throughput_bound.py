"""The memory-system bound on the recorded cases (Optimizer.keeps, profile/throughput.py).

What it checks, on every case bundle recorded by both collectors on the H100: no advice exceeds
100 / (the busiest share among the units its change keeps); an advice says which unit bounded it
exactly when the bound lowered it (or "mlp" when the memory-parallelism roof of
analysis/parallelism.py is the tighter one, "stream" when a loop-free stream's overlap of DRAM and
issue of analysis/coarsening.py is); optimizers that reshape memory traffic are never bounded by a
memory unit (Global Memory Coalescing has its own per-unit bound, checked in
test_coalescing_model.py). And on lavamd_unroll, the case that motivated it: Loop Unrolling (Eq. 5 gives ~1.8x)
is bounded by the L1, which the random gathers keep at ~63% of its peak (achieved: 1.26x).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.optimizers import REGISTRY
from gpa_lsp.analysis.report import render_text
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.throughput import bound

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/case.toml"))
BY_ID = {o.id: o for o in REGISTRY}


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
@pytest.mark.parametrize("case", CASES)
def test_no_estimate_exceeds_its_units_bound(case, collector):
    path = ROOT / "kernels" / case / "recorded" / f"{collector}.gpabundle"
    if not path.is_file():
        pytest.skip(f"{case}: no {collector} bundle recorded yet")
    spec = tomllib.loads((ROOT / "kernels" / case / "case.toml").read_text())
    profile = read_bundle(path).profile
    kernel = next(k for k in profile.kernels if spec["kernel"] in k.demangled)
    assert kernel.throughput is not None, "bundle recorded without the throughput pass"
    report = advise_bundle(path)
    krep = next(k for k in report.kernels if k.name == kernel.name)
    assert dict(krep.throughput) == dict(kernel.throughput.units)
    for a in krep.advice:
        if a.optimizer == "global_memory_coalescing":
            continue   # its own bound, from every unit's work left (tests/analysis/test_coalescing_model.py)
        cap, unit = bound(kernel.throughput, BY_ID[a.optimizer].keeps)
        assert a.estimated_speedup <= cap + 1e-3, (a.optimizer, a.estimated_speedup, cap)
        if a.bounded_by == "mlp":
            # the memory-parallelism roof (tests/analysis/test_parallelism.py): tighter than the unit's
            assert "dram" in BY_ID[a.optimizer].keeps and a.estimated_speedup < cap
            assert a.estimated_speedup == pytest.approx(a.bounded_pct / kernel.throughput.pct("dram"), abs=1e-3)
        elif a.bounded_by == "stream":
            # a loop-free stream's DRAM time overlaps its issue (analysis/coarsening.py,
            # tests/analysis/test_coarsening.py): only changes that cut issue work, tighter than the unit's
            assert BY_ID[a.optimizer].cuts_issue and a.estimated_speedup < cap
        elif a.bounded_by:
            assert a.bounded_by == unit and a.estimated_speedup == pytest.approx(cap, abs=1e-3)
            assert a.bounded_pct == pytest.approx(kernel.throughput.pct(unit))
            assert a.estimate_high is None or a.estimate_high <= cap + 1e-3
        if not BY_ID[a.optimizer].keeps:
            assert a.bounded_by is None


def test_lavamd_loop_unrolling_is_bounded_by_the_l1():
    report = advise_bundle(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle")
    k = report.kernels[0]
    a = next(a for a in k.advice if a.optimizer == "loop_unrolling")
    assert a.bounded_by == "l1"
    assert 55 < a.bounded_pct < 72
    assert 1.35 < a.estimated_speedup < 1.8          # Eq. 5 alone: ~1.8x; achieved 1.26x
    assert k.advice[0].optimizer == "loop_unrolling"  # still the case's advice
    text = render_text(report)
    assert "units (share of peak): L1/shared" in text
    assert "(bounded by L1/shared at" in text


def test_sarif_carries_the_bound_and_the_range(tmp_path):
    import json

    from gpa_lsp.cli import main
    out = tmp_path / "r.sarif"
    assert main(["analyze", str(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle"),
                 "--sarif", str(out)]) == 0
    results = json.loads(out.read_text())["runs"][0]["results"]
    lu = next(r for r in results if r["ruleId"] == "loop_unrolling")
    assert lu["properties"]["boundedBy"] == "l1"
    assert lu["properties"]["estimateLow"] <= lu["properties"]["estimatedSpeedup"] <= lu["properties"]["estimateHigh"]
    assert "bounded by L1/shared" in lu["message"]["text"]
