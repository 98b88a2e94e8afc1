"""A latency-bound per-lane walk streams once a warp reads each row, and a row walked twice is read
from DRAM once (lanewalk.rewalked_bytes, global_memory_coalescing.streaming_rewrite), on the
calibration case written for it (minmax_scale_rows) and the one it must leave alone (conv1d_taps)."""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.lanewalk import rewalked_bytes, walk
from gpa_lsp.analysis.optimizers.global_memory_coalescing import streaming_rewrite, unit_model

from bundle_contexts import ROOT, measured_speedup
from case_context import case_context


def test_minmax_scale_rows_reads_its_rows_once_after_the_rewrite():
    """2^17 rows of 384 floats, walked twice by a thread per row (min/max, then scale): the second
    walk's 201 MB are served by the L1 once a warp reads each row (32 warps x 1.5 KB per SM)."""
    ctx = case_context("minmax_scale_rows")
    assert walk(ctx).elements_per_lane == pytest.approx(768)
    assert rewalked_bytes(ctx) == pytest.approx((1 << 17) * 384 * 4, rel=0.01)
    m = unit_model(ctx)
    assert m.unit_estimate <= 1.0 and m.keep["dram"] == pytest.approx(2 / 3 * 0.661, rel=0.05)


def test_minmax_scale_rows_priced_at_the_stream_it_becomes():
    """No unit holds the original (a chain of 32-line round trips): the advice is priced at what the
    warp per row streams (the unit model's bound), 13.7x against 13.2x by kernel durations (12.5x
    by events); the matched stalls said 7.7x."""
    ctx = case_context("minmax_scale_rows")
    bound = streaming_rewrite(ctx)
    measured = measured_speedup("minmax_scale_rows", "warp_per_row", "duration_ms")
    assert bound == pytest.approx(unit_model(ctx).bound) and measured < bound < 1.1 * measured
    report = advise_bundle(ROOT / "kernels" / "minmax_scale_rows" / "recorded" / "ncu.gpabundle")
    top = report.kernels[0].advice[0]
    assert top.optimizer == "global_memory_coalescing"
    assert top.estimated_speedup == pytest.approx(bound, rel=1e-3)


def test_a_remainder_loop_is_not_a_second_walk():
    """conv1d_taps (calibration): nvcc's remainder of its unrolled tap loop walks the same array for 8
    of 264 taps: a continuation, not a walk again."""
    assert rewalked_bytes(case_context("conv1d_taps")) == 0.0
