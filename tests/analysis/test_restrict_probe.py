"""Restrict Pointer on its own probe (benchmarks/restrict, recorded on the H200 with both collectors:
``restrict.cu --profile`` runs each plain kernel; ``h200.jsonl`` what `const __restrict__` measured
on each in the same device call).

What the estimator gets right, and the gap the fourth blind batch found (paged_kv_gather's restrict
control: 2.88x, not advised) shown on the probe itself, not on a validation case: loads a store
precedes in a latency-bound kernel (``hoist_low``: 4 warps per SM) gain by being batched, waits
overlapping waits; GPA's latency hiding (Eq. 3-4) bounds the gain by the issued samples, of which such
a kernel has almost none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle

PROBE = Path(__file__).resolve().parents[2] / "benchmarks" / "restrict"


def _measured() -> dict[str, float]:
    return {r["kernel"]: r["speedup"] for r in map(json.loads, (PROBE / "h200.jsonl").read_text().splitlines())}


def _restrict(collector: str, kernel: str):
    report = advise_bundle(str(PROBE / "recorded" / f"restrict.{collector}.gpabundle"))
    k = next(k for k in report.kernels if k.name.startswith(f"_Z{len(kernel)}{kernel}"))
    return next((a for a in k.advice if a.optimizer == "restrict_pointer"), None)


@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_reloads_and_read_only_streams(collector):
    """Reloads vanish (reload: measured 3.76x; estimated 4.4-4.8x by stall elimination); a kernel
    no store precedes gets no advice (stream, gather: measured 1.00x)."""
    m = _measured()
    assert m["reload"] > 3 and m["stream"] < 1.02 and m["gather"] < 1.02
    a = _restrict(collector, "reload_plain")
    assert a is not None and 3.0 < a.estimated_speedup < 5.5
    assert _restrict(collector, "stream_plain") is None and _restrict(collector, "gather_plain") is None


@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_a_store_preceded_stream_at_full_occupancy_gains_little(collector):
    """hoist (64 warps per SM): measured 1.12x on the H200; estimated 1.15x."""
    a = _restrict(collector, "hoist_plain")
    assert a is not None and abs(a.estimated_speedup - _measured()["hoist"]) < 0.1


@pytest.mark.xfail(strict=True, reason="latency hiding (Eq. 3-4) is bounded by the issued samples: batching "
                   "loads behind a store in a latency-bound kernel overlaps waits with waits (docs/optimizers.md)")
@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_batching_loads_behind_a_store_in_a_latency_bound_kernel(collector):
    """hoist_low (4 warps per SM): measured 2.77x; Restrict Pointer matches 91% of the samples and
    estimates 1.01x. Wanted: within a quarter of what it measured."""
    a = _restrict(collector, "hoist_low_plain")
    assert a is not None and a.estimated_speedup == pytest.approx(_measured()["hoist_low"], rel=0.25)
