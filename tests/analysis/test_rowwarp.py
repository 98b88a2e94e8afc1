"""A warp per row of short rows does not reach a stream's rate (analysis/rowwarp.py): the probe's
table, and the coalescing bound of the calibration cases whose rewrite reads rows of 512-640 B."""

from __future__ import annotations

import pytest

from gpa_lsp.analysis import rowwarp
from gpa_lsp.analysis.lanewalk import walk
from gpa_lsp.analysis.optimizers.global_memory_coalescing import unit_model
from gpa_lsp.profile.model import Device

from bundle_contexts import measured_speedup
from case_context import case_context

H200 = Device(name="NVIDIA H200", sm=90, sm_count=132)
H100 = Device(name="NVIDIA H100 80GB HBM3", sm=90, sm_count=132)


def test_the_probe_short_rows_reach_less_of_the_stream():
    """128-float rows: DRAM at 0.8-0.95 of the stream's rate, the L2-resident read lower; 1 KB rows
    and longer at the stream's; 32-float rows under half of it."""
    d512, l512 = rowwarp.efficiency(H200, 512, "dram"), rowwarp.efficiency(H200, 512, "l2")
    assert 0.8 < d512 < 0.95 and 0.6 < l512 < d512
    for b in (1024, 4096, 16384, 1 << 20):
        assert rowwarp.efficiency(H200, b, "dram") > 0.97
    assert rowwarp.efficiency(H200, 128, "dram") < 0.5 and rowwarp.efficiency(H200, 64, "dram") < 0.5
    # between the probe's rows, log2-linear: 640 B between 512 B's and 1 KB's
    assert d512 < rowwarp.efficiency(H200, 640, "dram") < rowwarp.efficiency(H200, 1024, "dram")


def test_the_h100_borrows_its_chips_probe():
    assert rowwarp.efficiency(H100, 512, "dram") == rowwarp.efficiency(H200, 512, "dram")
    assert rowwarp.efficiency(Device(name="Tesla T4", sm=75, sm_count=40), 512, "dram") is None


def test_gemv_resident_bound_at_the_row_warps_share():
    """gemv_resident (calibration): 160-float rows the L2 keeps between launches, a warp per row reads
    640 B: the resident bound falls by the probe's L2 share (~0.83), from 8.7x to ~7.2x, toward the
    6.3x its warp per row measured by kernel durations."""
    ctx = case_context("gemv_resident")
    w = walk(ctx)
    assert w.elements_per_lane == pytest.approx(160) and w.row_bytes == pytest.approx(640)
    m = unit_model(ctx)
    assert m.bound_unit == "resident"
    assert 0.78 < m.extra["rowwarp"] < 0.88
    measured = measured_speedup("gemv_resident", "warp_per_row", "duration_ms")
    assert measured < m.bound < 1.2 * measured


def test_long_rows_keep_the_stream_bound():
    """gemv_rows (calibration, 4 KB rows): a warp per row streams; no row-warp share."""
    m = unit_model(case_context("gemv_rows"))
    assert m.bound_unit == "dram" and "rowwarp" not in m.extra
