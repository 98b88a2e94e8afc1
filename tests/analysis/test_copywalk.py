"""A latency-bound per-lane copy walk is priced by the copywalk probe's coalesced copy
(analysis/copywalk.py): the probe's premise on its recording (benchmarks/coalescing/copywalk_probe.cu,
H200), which walks count as copies, and the estimate on the calibration case index_select_rows."""

from __future__ import annotations

from bundle_contexts import case_hottest, h200_probe
from gpa_lsp.analysis.copywalk import NARROW, coalesced_share, copy_walk_estimate, is_copy_walk, widened_estimate
from gpa_lsp.analysis.optimizers.global_memory_coalescing import unit_model


def _probe() -> dict[tuple[str, int], dict]:
    return {(r["config"], r["warps_per_sm"]): r for r in h200_probe("copywalk")}


def test_the_per_lane_copy_walk_thrashes_as_warps_grow():
    """A thread per row: slower at 64 warps per SM than at 8, reading several times its data from
    DRAM there; a warp per row is the other way round, and at 64 warps over 10x faster."""
    t = _probe()
    g1_8, g1_64, g32_8, g32_64 = t["walk_g1", 8], t["walk_g1", 64], t["walk_g32", 8], t["walk_g32", 64]
    assert g1_64["median_ms"] > 2 * g1_8["median_ms"]
    assert g1_64["dram_read_bytes"] > 5 * g32_64["dram_read_bytes"]
    assert g32_8["median_ms"] > 3 * g32_64["median_ms"]
    assert g1_64["median_ms"] > 10 * g32_64["median_ms"]


def test_index_select_rows_is_a_copy_walk_priced_by_the_probe():
    """index_select_rows (calibration, H200, 64 warps per SM): no unit held, the coalesced copy at the
    probe's 43% of DRAM's peak; a warp per row measured 12.32x (events), coalescing ranks first at
    11-13x (matched stalls alone said 7.67x)."""
    ctx, report = case_hottest("index_select_rows")
    m = unit_model(ctx)
    assert is_copy_walk(ctx) and m.unit_estimate == 1.0
    assert 40.0 < coalesced_share(ctx) < 45.0
    assert 11.0 < copy_walk_estimate(ctx, m) < 13.0
    top = report.kernels[0].advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 17
    assert 11.0 < top.estimated_speedup < 13.0


def test_a_read_only_walk_is_not_a_copy_walk():
    """gemv_rows (calibration): a thread per row summing it, no store in the walk's loop; its
    estimate is the unit model's (the L1 it unloads), not the copy's."""
    ctx, _ = case_hottest("gemv_rows")
    assert not is_copy_walk(ctx)
    assert copy_walk_estimate(ctx, unit_model(ctx)) is None


def test_float4_shortens_the_per_lane_chain_and_memory_transaction_reduction_says_so():
    """The probe's thread per row moving float4s (a quarter of the round trips) beats moving floats
    2.3-3.3x at every occupancy; index_select_rows' Memory Transaction Reduction (float4 measured
    3.73x) is priced at the probe's ratio at 64 warps per SM, where matched throttle said 1.02x."""
    t = _probe()
    for w in (8, 16, 32, 64):
        assert 2.0 < t["walk_g1", w]["median_ms"] / t["walkv4_g1", w]["median_ms"] < 4.0
    ctx, report = case_hottest("index_select_rows")
    assert 3.0 < widened_estimate(ctx, unit_model(ctx)) < 3.6
    mtr = next(a for a in report.kernels[0].advice if a.optimizer == "memory_transaction_reduction")
    assert 3.0 < mtr.estimated_speedup < 3.6


def test_a_read_only_walk_is_not_widened():
    """gemv_rows' walk is read-only (no copy): nothing to widen by this rule."""
    ctx, _ = case_hottest("gemv_rows")
    assert widened_estimate(ctx, unit_model(ctx)) is None


def test_halves_widened_to_16_bytes_shorten_the_chain_eightfold():
    """The probe's thread per row moving 2-byte elements (128 steps per 256-byte row) against the same
    rows in 16-byte steps (walkv4_g1, 16 steps): 4-6.5x at 8-64 warps per SM, well above the floats'
    2.3-3.3x (a quarter of the round trips). Priced for a walk of 16-bit loads (copywalk.NARROW)."""
    t = _probe()
    for w in (8, 16, 32, 64):
        halves = t["walkh_g1", w]["median_ms"] / t["walkv4_g1", w]["median_ms"]
        floats = t["walk_g1", w]["median_ms"] / t["walkv4_g1", w]["median_ms"]
        assert 3.5 < halves < 7.0 and halves > floats * 1.2
    assert set(NARROW) == {16, 32}
