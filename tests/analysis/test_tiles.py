"""The coalesced code's form on the loop-free DRAM roof (analysis/tiles.py): a kernel read along one
index and written along another gets the shared-memory tile's advice and roof, measured by
benchmarks/coalescing/tile_probe.cu on the H200 (the ``tile`` rows of gpa_lsp/data/coalescing.json)
and checked on the calibration case layout_nhwc, recorded on the H200."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.coalescing import model, transposed, transposed_accesses
from gpa_lsp.analysis.tiles import TILE_ELEMENTS, coalesced_form

from case_context import case_context

ROOT = Path(__file__).resolve().parents[2]
H200 = "NVIDIA H200"


def _tile_rows() -> dict[tuple[str, int], float]:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return {(r["config"], r["warps_per_sm"]): r["dram_pct"] for r in d["devices"][H200]["tile"]}


def test_the_probe_says_large_blocks_and_a_barrier_cost_dram_share():
    """What the model stands on: at the same loads in flight, blocks of 1024 pull less than blocks
    of 256, a barrier between the loads and the store less again, and one element per thread in a
    32 x 32 transposed tile least; the barrier alone in blocks of 256 costs a few percent."""
    t = _tile_rows()
    for w in (32, 64):
        assert t[("tile2d_b1024_m1", w)] < t[("lf2d_b1024_m1", w)] < t[("lf_b1024_m1", w)] < t[("lf_b256_m1", w)]
    assert 0.75 < t[("lf_b1024_m1", 64)] / t[("lf_b256_m1", 64)] < 0.95
    assert 0.9 < t[("tile_b256_m2", 64)] / t[("lf_b256_m2", 64)] < 1.0
    assert t[("tile2d_b1024_m1", 64)] / t[("lf_b256_m1", 64)] < 0.75


def test_transposed_accesses_arithmetic():
    """Unit test of the rule's arithmetic on made-up (executed, sectors, ideal, store) tuples."""
    transpose = [(100, 4.0, 4.0, False), (100, 32.0, 4.0, True)]
    assert transposed(transpose)
    assert not transposed([(100, 5.0, 4.0, False), (100, 4.0, 4.0, True)])       # misaligned, not far
    assert not transposed([(100, 1.0, 1.0, False), (100, 32.0, 4.0, False)])      # a broadcast is not a line
    assert not transposed([(100, 32.0, 4.0, False), (100, 32.0, 4.0, True)])     # all far: a remap fixes all


def test_layout_nhwc_gets_the_tile_and_its_roof():
    """layout_nhwc (calibration, H200): NCHW -> NHWC, the read one line per warp, the store 32 lines.
    The tile of 32 x 8 threads moving 4 elements each ran 6.16x (events) / 6.50x (kernel
    durations); priced at the original's loads in flight the loop-free roof held the estimate to
    4.31x. The advice names the tile, first, on the store's line, near what it achieved."""
    ctx = case_context("layout_nhwc")
    assert transposed_accesses(ctx)
    more, factor = coalesced_form(ctx, True)
    assert more == TILE_ELEMENTS and 0.9 < factor < 1.0
    m = model(ctx)
    assert m.extra["loopfree_inflight"] > 3 * 6900          # 4 lines per warp in flight, not one
    report = advise_bundle(str(ROOT / "kernels" / "layout_nhwc" / "recorded" / "ncu.gpabundle"))
    top = report.kernels[0].advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 22
    assert 5.5 < top.estimated_speedup < 7.0
    assert "shared-memory tile" in top.suggestion and "32 x 8 threads" in top.suggestion


def test_a_walk_is_not_a_tile():
    """gemv_rows: a thread walks its row (the loads in a loop) and the store of y is coalesced. A
    warp per row is its fix, not a tile: not transposed, and the blocks of 256 keep the roof."""
    ctx = case_context("gemv_rows")
    assert not transposed_accesses(ctx)
    assert coalesced_form(ctx, False) == (1.0, 1.0)
    report = advise_bundle(str(ROOT / "kernels" / "gemv_rows" / "recorded" / "ncu.gpabundle"))
    a = next(a for a in report.kernels[0].advice if a.optimizer == "global_memory_coalescing")
    assert "tile" not in a.suggestion


def test_large_blocks_lower_the_loop_free_roof():
    """hotspot_double: loop-free, blocks of 1024 threads, no transposed access: the roof is the
    probe's curve times blocks of 1024 over blocks of 256 (the same threads in the same blocks)."""
    ctx = case_context("hotspot_double")
    assert ctx.launch.threads_per_block == 1024 and not transposed_accesses(ctx)
    more, factor = coalesced_form(ctx, False)
    t = _tile_rows()
    assert more == 1.0 and abs(factor - t[("lf_b1024_m1", 64)] / t[("lf_b256_m1", 64)]) < 1e-9


def test_the_tile_is_priced_as_a_stream_at_the_probes_share():
    """layout_nhwc (calibration): the advised tile's time is every unit's work left at the share it
    reaches, DRAM's at the probe's tile (``tile_b256_m2`` at 64 warps per SM), not Eq. 2's "the time
    the L2 was not busy stays". Its tile pulled 69% of DRAM's peak (6.16x by events); the estimate
    is its DRAM bytes at 68.3%, inside the range whose top is the loop-free curve's roof."""
    ctx = case_context("layout_nhwc")
    m = model(ctx)
    assert m.unit == "l2"
    assert m.extra["tile_dram_pct"] == _tile_rows()[("tile_b256_m2", 64)]
    assert m.extra["tile_dram_pct"] < m.extra["loopfree_dram_pct"]
    # the stream's time: the DRAM bytes (the same after the tile) at the probe's share
    assert abs(m.unit_estimate - m.extra["tile_dram_pct"] / (m.util["dram"] * m.keep["dram"])) < 1e-6
    assert 5.9 < m.unit_estimate < 6.3 and m.unit_estimate < m.bound


def test_a_kernel_not_transposed_keeps_eq2():
    """strided_index (calibration): loop-free, held by the L2, its strided load remapped, no tile:
    no tile share, its unit estimate Eq. 2's."""
    ctx = case_context("strided_index")
    m = model(ctx)
    assert not transposed_accesses(ctx) and m.unit == "l2" and "loopfree_dram_pct" in m.extra
    assert "tile_dram_pct" not in m.extra
    f = min(1.0, m.util["l2"] / m.roofs["l2"])
    assert abs(m.unit_estimate - 1.0 / ((1.0 - f) + f * m.keep["l2"])) < 1e-6
