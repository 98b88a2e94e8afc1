"""The estimate range (Advice.estimate_low/high) on the real recorded bundles.

What it checks: every code advice carries a range that contains its point estimate; the low end
is what the method gives when only idle-scheduler (latency) samples are lost time, the high end
never exceeds the issue-slot bound for stall elimination nor Theorem 5.1's 2x for latency hiding;
parallel advice carries no range.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle

ROOT = Path(__file__).resolve().parents[2]
CASES = ("lavamd_unroll", "spill_bounds", "fan2_threads", "restrict_fir")


def _kernel(case: str):
    spec = tomllib.loads((ROOT / "kernels" / case / "case.toml").read_text())
    bundle = ROOT / "kernels" / case / "recorded" / f"{spec['collector']}.gpabundle"
    if not bundle.is_file():
        pytest.fail(f"recorded bundle missing: {bundle}")
    report = advise_bundle(bundle)
    return spec, next(k for k in report.kernels if spec["kernel"] in k.demangled)


@pytest.mark.parametrize("case", CASES)
def test_range_brackets_point(case):
    spec, kernel = _kernel(case)
    assert kernel.advice
    for a in kernel.advice:
        if a.kind == "parallel":
            assert a.estimate_low is None and a.estimate_high is None
            continue
        assert a.estimate_low is not None and a.estimate_high is not None, a.optimizer
        assert 1.0 <= a.estimate_low <= a.estimated_speedup <= a.estimate_high, a


def test_latency_hiding_range_within_theorem():
    _, kernel = _kernel("lavamd_unroll")
    adv = next(a for a in kernel.advice if a.optimizer == "loop_unrolling")
    # low: only one warp's own issue fills idle cycles (a few percent); high: Theorem 5.1
    assert adv.estimate_low < 1.2 < adv.estimated_speedup
    assert adv.estimate_high <= 2.0


def test_stall_elimination_range_is_wide_when_stalls_overlap_issue():
    _, kernel = _kernel("spill_bounds")
    adv = next(a for a in kernel.advice if a.optimizer == "register_reuse")
    # the spill stalls include samples during which the scheduler issued another warp: the low end
    # (latency samples only) is clearly below the point, the high end is the issue-slot bound above it
    assert adv.estimate_low < 0.8 * adv.estimated_speedup
    assert adv.estimate_high > 1.5 * adv.estimated_speedup
