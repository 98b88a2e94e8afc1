"""A misaligned contiguous access is not Global Memory Coalescing's to fix (analysis/coalescing.py
``misaligned_only``): its premise on the misalign probe's recording (benchmarks/coalescing/
misalign_probe.cu, H200), the classification's arithmetic, and the rule on real recordings (the
calibration case filter2d_5x5, whose taps are misaligned; transpose-like accesses keep their excess)."""

from __future__ import annotations

import pytest

from bundle_contexts import case_hottest, h200_probe
from gpa_lsp.analysis.coalescing import misaligned_only, remappable_excess, sector_excess


def _probe() -> dict[tuple[str, int], dict]:
    return {(r["config"], r["warps_per_sm"]): r for r in h200_probe("misalign")}


def test_the_extra_sector_moves_no_dram_bytes_and_costs_little():
    """copy_a1 reads one float off the line: 5 sectors a request instead of 4, the same DRAM bytes,
    at most 5% slower than the aligned copy at 16, 32 and 64 warps per SM."""
    t = _probe()
    for w in (16, 32, 64):
        a0, a1 = t["copy_a0", w], t["copy_a1", w]
        assert a1["sectors"] / a1["requests"] == pytest.approx(5.0)
        assert a0["sectors"] / a0["requests"] == pytest.approx(4.0)
        assert a1["dram_read_bytes"] == pytest.approx(a0["dram_read_bytes"], rel=0.01)
        assert 1.0 <= a1["median_ms"] / a0["median_ms"] < 1.05


@pytest.mark.parametrize("kernel", ["s3", "t9", "h5"])
def test_staging_misaligned_taps_through_shared_memory_loses(kernel):
    """The change that removes the misaligned sectors, an aligned shared tile, is slower than the
    misaligned taps at every occupancy the probe ran."""
    t = _probe()
    for w in (16, 32, 64):
        plain, tiled = t[kernel, w], t[f"{kernel}_tile", w]
        assert tiled["sectors"] < plain["sectors"]
        assert tiled["median_ms"] > plain["median_ms"]


def test_misaligned_only_arithmetic():
    """Unit test of the arithmetic (sectors and ideal sectors per request written by hand)."""
    assert misaligned_only(5, 4)        # 32 floats one off a line
    assert misaligned_only(9, 8)        # 32 doubles
    assert misaligned_only(3, 2)        # 32 halves
    assert misaligned_only(2, 1)        # 32 bytes
    assert misaligned_only(4.8, 3.95)   # a boundary warp's inactive lanes in the average
    assert not misaligned_only(6, 4)    # a 16 x 16 warp shape's two half-rows, misaligned
    assert not misaligned_only(4, 2)    # half the lanes, every other pair
    assert not misaligned_only(32, 4)   # a lane per sector
    assert not misaligned_only(1, 0)


def test_filter2d_taps_are_misaligned_and_not_coalescings():
    """filter2d_5x5 (calibration): its taps load 5 sectors for 4; no excess is left for Global
    Memory Coalescing, while Memory Transaction Reduction still leaves that share out, and the
    coalescing advice (1.03x before the rule) is gone."""
    ctx, report = case_hottest("filter2d_5x5")
    misaligned = [o for o, p in ctx.pcs.items()
                  if p.sectors and p.ideal_sectors and p.executed
                  and p.sectors / p.executed > p.ideal_sectors / p.executed * 1.01]
    assert misaligned
    for o in misaligned:
        assert remappable_excess(ctx, o) == 0.0
        assert sector_excess(ctx, o) == pytest.approx(0.2, abs=0.01)
    assert "global_memory_coalescing" not in {a.optimizer for k in report.kernels for a in k.advice}


def test_uncoalesced_accesses_keep_their_excess():
    """layout_nhwc (calibration): its transposed store puts each lane in its own sector; the rule
    leaves that excess to coalescing, which still ranks first."""
    ctx, report = case_hottest("layout_nhwc")
    assert max(remappable_excess(ctx, o) for o in ctx.pcs) > 0.7
    assert report.kernels[0].advice[0].optimizer == "global_memory_coalescing"
