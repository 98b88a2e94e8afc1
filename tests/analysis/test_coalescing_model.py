"""The per-unit roof model of Global Memory Coalescing (analysis/coalescing.py).

Three kinds of checks: the device table (gpa_lsp/data/coalescing.json, measured on the H100 by
benchmarks/coalescing/record.sh) says what the model assumes of it; on every case bundle the
advice never exceeds the model's bound and names the unit that set it exactly when the bound
lowered it; and on the calibration cases that motivated it, the estimate lands near what the
coalesced variant achieved on the H100 (docs/accuracy.md), a latency-bound kernel keeps its
matched-stall estimate, and a device without a table keeps the old behaviour.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.coalescing import (OVERLAP_P, device_table, gathers, loopfree_dram_roof, lsu_excess_share,
                                         model, remappable_excess, unloaded_time)
from gpa_lsp.analysis.optimizers import REGISTRY
from gpa_lsp.analysis.optimizers.global_memory_coalescing import unit_model
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.throughput import UNITS

from case_context import case_context as _context

ROOT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"
CASES = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/case.toml"))
COALESCING = next(o for o in REGISTRY if o.id == "global_memory_coalescing")


def _walk(config: str, foot: str, warps: int = 64) -> dict:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return next(r for r in d["devices"][H100]["walk"]
                if r["config"] == config and r["foot"] == foot and r["warps_per_sm"] == warps)


def _advice(bundle, kernel_part: str):
    report = advise_bundle(bundle)
    k = next(k for k in report.kernels if kernel_part in k.demangled)
    return next((a for a in k.advice if a.optimizer == COALESCING.id), None), k


# --- the table ---------------------------------------------------------------------------------

def test_the_l1_costs_a_cycle_per_line_whatever_the_sectors():
    """What the L1 part of the model stands on: the busy time per request follows the lines it
    touches (1 line of 4 sectors, 4 lines of 4 sectors, 32 lines of 32 sectors)."""
    busy = {c: r["duration_ns"] * r["l1_pct"] / r["requests"]
            for c in ("row32_ld", "row8_ld", "row1_ld") for r in [_walk(c, "l1")]}
    assert _walk("row8_ld", "l1")["sectors_per_request"] == _walk("row32_ld", "l1")["sectors_per_request"] == 4
    assert 3.0 < busy["row8_ld"] / busy["row32_ld"] < 5.0        # 4 lines, the same 4 sectors
    assert 20.0 < busy["row1_ld"] / busy["row32_ld"] < 36.0      # 32 lines
    t = device_table(H100)
    assert 0.8 < t.l1_cycles_per_line < 1.2
    assert 0.75 < t.held < 0.95


def test_excess_sectors_that_later_steps_use_stay_off_dram_and_l2():
    """rowG walks use every sector again: the excess hits in L1, and L2 and DRAM move the ideal
    sectors; stride8 uses one element per sector, so DRAM moves 8x the bytes."""
    coalesced, walk, stride = _walk("row32_ld", "dram"), _walk("row1_ld", "dram", 8), _walk("stride8_ld", "dram")
    assert walk["dram_bytes"] == pytest.approx(coalesced["dram_bytes"], rel=0.1)
    assert walk["l2_sectors"] == pytest.approx(coalesced["l2_sectors"], rel=0.1)
    assert stride["dram_bytes"] > 6 * coalesced["dram_bytes"]


def test_roofs_and_store_costs():
    t = device_table(H100)
    assert 85 < t.roofs["dram"] <= 100 and 90 < t.roofs["l1"] <= 100 and 90 < t.roofs["l2"] <= 100
    # a store to 32 lines costs the L2 far more than one to a line, though less than 32x
    assert 8 < t.l2_store_cost(32) / t.l2_store_cost(1) < 32
    assert t.l2_store_cost(4) == pytest.approx((t.l2_store_cost(1) + t.l2_store_cost(8)) / 2, rel=0.3)


# --- every case: the bound holds ---------------------------------------------------------------

@pytest.mark.parametrize("case", [c for c in CASES if (ROOT / "kernels" / c / "recorded" / "ncu.gpabundle").exists()])
def test_coalescing_never_exceeds_its_unit_bound(case):
    spec = tomllib.loads((ROOT / "kernels" / case / "case.toml").read_text())
    bundle = ROOT / "kernels" / case / "recorded" / "ncu.gpabundle"
    a, _ = _advice(bundle, spec["kernel"])
    if a is None:
        return
    m = unit_model(_context(case))     # the model the advice reads: spread by its rewrite, row-warp bound
    if m is None:
        assert a.bounded_by is None
        return
    assert a.estimated_speedup <= m.bound + 1e-3
    if a.bounded_by:
        assert a.bounded_by == m.bound_unit and (a.bounded_by in UNITS or a.bounded_by in ("mlp", "resident", "rows"))
        assert a.estimated_speedup == pytest.approx(m.bound, abs=1e-3)
    assert 0 <= m.alpha <= 1 and all(0 < k <= 1 for k in m.keep.values())


# --- the cases that motivated it (calibration) -------------------------------------------------

def test_conv1d_taps_is_held_by_the_l1_and_ranks_coalescing_first():
    """95% of the L1's peak, 32-sector loads: matched stalls gave 1.20x, the coalesced variant
    achieved 3.85x; the L1 unit estimate, with the issue work the L1 no longer hides, ~3.7x
    (Eq. 2 alone: 4.26x)."""
    m = model(_context("conv1d_taps"))
    assert m.unit == "l1" and lsu_excess_share(_context("conv1d_taps")) > 0.7
    a, k = _advice(ROOT / "kernels" / "conv1d_taps" / "recorded" / "ncu.gpabundle", "conv1d")
    assert k.advice[0].optimizer == COALESCING.id
    assert 3.5 < a.estimated_speedup < 4.1


def test_gemv_rows_is_bounded_by_dram():
    """The coalesced variant runs DRAM at 89% of peak (3.11x); the model's DRAM bound is 93/28."""
    a, _ = _advice(ROOT / "kernels" / "gemv_rows" / "recorded" / "ncu.gpabundle", "gemv")
    assert a.bounded_by == "dram"
    assert 2.8 < a.estimated_speedup < 3.6


def test_a_latency_bound_kernel_keeps_its_matched_stall_estimate():
    """lavamd_unroll's gathers run the L1 at 63% of its peak, below the share at which the probe's
    time followed the L1's work: the L1 did not hold the kernel, so no unit estimate (Loop
    Unrolling stays first, tests/analysis/test_cases.py)."""
    m = model(_context("lavamd_unroll"))
    assert m is not None and m.unit is None and m.unit_estimate == 1.0
    a, _ = _advice(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "ncu.gpabundle", "kernel_gpu_cuda")
    assert a is None or a.estimated_speedup < 1.2


def _renamed(name: str, sm_count: int):
    bundle = read_bundle(ROOT / "kernels" / "gemv_rows" / "recorded" / "ncu.gpabundle")
    dev = replace(bundle.profile.device, name=name, sm_count=sm_count)
    return replace(bundle, profile=replace(bundle.profile, device=dev))


def test_a_device_without_a_table_of_its_chip_keeps_the_matched_stall_estimate():
    assert device_table("Some GPU") is None
    a, _ = _advice(_renamed("Some GPU", 114), "gemv")      # sm_90 with 114 SMs: no probed chip
    assert a.bounded_by is None and a.estimated_speedup < 2.0      # the matched stalls alone: 1.78x


def test_a_device_of_a_probed_chip_takes_that_chips_table():
    """The same recording under another name of the H100's chip (sm_90, 132 SMs): the H100's
    table applies (analysis/probe_tables.py) and the advice is the H100's."""
    a, _ = _advice(_renamed("Some GPU", 132), "gemv")
    b, _ = _advice(read_bundle(ROOT / "kernels" / "gemv_rows" / "recorded" / "ncu.gpabundle"), "gemv")
    assert a.bounded_by == b.bounded_by == "dram" and a.estimated_speedup == pytest.approx(b.estimated_speedup)


# --- what the L1 no longer hides (benchmarks/coalescing/overlap_probe.cu) ----------------------

def _probe(name: str, config: str, warps: int) -> dict:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return next(r for r in d["devices"][H100][name] if r["config"] == config and r["warps_per_sm"] == warps)


@pytest.mark.parametrize("warps", [16, 64])
def test_the_issue_hides_under_a_saturated_l1_and_not_under_an_unloaded_one(warps):
    """8 loads of 8 lines per iteration: the L1 at its peak holds the time whatever the FFMAs
    (0-128 per iteration: within 2%), until the issue nears its own peak; with the loads coalesced
    the L1's and the issue's shares add up to the time (p ~ 1), the other end from perfect
    overlap; the model's p lies between."""
    flat = [_probe("overlap", f"mix_l8_a{a}", warps)["duration_ns"] for a in (0, 16, 32, 64, 128)]
    assert max(flat) < 1.02 * min(flat)
    assert all(_probe("overlap", f"mix_l8_a{a}", warps)["l1_pct"] > 95 for a in (0, 128))
    for a in (0, 16, 32, 64, 128):
        r = _probe("overlap", f"mix_l1_a{a}", warps)
        assert 0.9 < r["l1_pct"] / device_table(H100).roofs["l1"] + r["issue_pct"] / 100 < 1.15
    r = _probe("overlap", "mix_l8_a256", warps)
    x, y = r["l1_pct"] / device_table(H100).roofs["l1"], r["issue_pct"] / 100
    assert x ** 3 + y ** 3 > 1 > x ** 4 + y ** 4         # p between 3 and 4
    assert 1 < OVERLAP_P < 3


def test_the_time_left_combines_the_l1_and_the_issue():
    """Eq. 2 where nothing else was busy; more than Eq. 2 and less than the sum with issue work;
    units other than the L1 keep Eq. 2."""
    assert unloaded_time("l1", 0.98, 0.1, {"issue": 0.0}) == pytest.approx(0.02 + 0.098)
    t = unloaded_time("l1", 0.98, 0.1, {"issue": 10.0})
    assert 0.02 + 0.098 < t < 0.02 + 0.098 + 0.10
    assert unloaded_time("l2", 0.98, 0.1, {"issue": 10.0}) == pytest.approx(0.02 + 0.098)


def test_gaussian_blocks_unit_estimate_meets_its_issue_work():
    """L1 at 99%, issue at 45%: coalescing leaves 24% of the L1's work, and the issue work it hid
    is now most of the time; the coalesced variant (issue 85%, L1 52% of its roof:
    benchmarks/coalescing/recorded/cases_gaussian_blocks.csv) achieved 1.88x. Eq. 2 said 4.1x."""
    m = model(_context("gaussian_blocks"))
    assert m.unit == "l1" and 1.8 < m.unit_estimate < 2.1


# --- a loop-free kernel's loads in flight (benchmarks/coalescing/loopfree_probe.cu) -------------

def test_a_loop_free_kernel_pulls_what_a_loop_does_with_the_same_dram_bytes_in_flight():
    """At 64 warps per SM the loop-free kernel reaches the streaming loop's DRAM share at the same
    bytes in flight (8 KB, 16 KB, 32 KB), L1-hit loads beside them change nothing, and fewer
    warps reach less."""
    for m in (1, 2, 4):
        lf, loop = _probe("loopfree", f"lf_m{m}", 64), _probe("loopfree", f"loop_m{m}", 64)
        assert lf["dram_pct"] == pytest.approx(loop["dram_pct"], rel=0.05)
    for m in (1, 2):
        for w in (8, 16, 32, 64):
            assert _probe("loopfree", f"lfhit_m{m}", w)["dram_pct"] == pytest.approx(
                _probe("loopfree", f"lf_m{m}", w)["dram_pct"], rel=0.05)
    shares = [_probe("loopfree", "lf_m1", w)["dram_pct"] for w in (8, 16, 32, 64)]
    assert shares == sorted(shares) and shares[-1] < 75
    t = device_table(H100)
    assert [f for f, _ in t.loopfree] == sorted(f for f, _ in t.loopfree)


def test_strided_index_coalesced_stays_under_its_loop_free_roof():
    """A loop-free kernel (calibration): 2 lines per warp from DRAM x 64 warps = 16 KB in flight
    after coalescing, a roof of ~81%; its coalesced variant ran DRAM at 77%
    (benchmarks/coalescing/recorded/cases.csv). The roof does not bind its estimate (5.75x,
    achieved 6.50x)."""
    ctx = _context("strided_index")
    m = model(ctx)
    assert 14000 < m.extra["loopfree_inflight"] < 18000
    assert 77.4 < m.extra["loopfree_dram_pct"] < 86
    a, _ = _advice(ROOT / "kernels" / "strided_index" / "recorded" / "ncu.gpabundle", "magnitude")
    assert a.bounded_by is None and a.estimated_speedup < m.bound


def test_a_loop_free_roof_that_binds_says_so():
    """jacobi2d (validation; its estimate is pinned in tests/cases/validation_pins.json): the
    advice is bounded by what its coalesced loads in flight pull, and says the share."""
    a, _ = _advice(ROOT / "kernels" / "jacobi2d" / "recorded" / "ncu.gpabundle", "jacobi_step")
    m = model(_context("jacobi2d"))
    roof = m.util["dram"] / m.extra["loopfree_dram_pct"]      # its DRAM time at the loads-in-flight roof
    assert a.estimated_speedup == pytest.approx(1.0 / roof, rel=0.01)
    # the L2's kept requests (the coalesced code's own: the L2 sees what the L1 misses) bind at the
    # same figure to 0.1%; either is named
    if a.bounded_by == "mlp":
        assert a.bounded_pct == pytest.approx(m.extra["loopfree_dram_pct"])
        assert "loads this code keeps in flight reach 70%" in a.bound_text()
    else:
        assert a.bounded_by == "l2"


def test_the_loop_free_roof_needs_a_loop_free_kernel_that_does_not_contradict_it():
    """gemv_rows walks its rows in a loop (its fix may change the threads): no roof; bitonic_global
    already runs its DRAM above what its bytes per warp would pull (an 8 us launch the L2
    holds): dropped."""
    assert loopfree_dram_roof(_context("gemv_rows"), 2.7e8) is None
    assert "loopfree_dram_pct" not in model(_context("gemv_rows")).extra
    assert "loopfree_dram_pct" not in model(_context("bitonic_global")).extra


# --- a per-lane walk (benchmarks/coalescing/lanewalk_probe.cu) ---------------------------------

def _lanewalk(mode: str, length: int, gather: bool, warps: int) -> dict:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return next(r for r in d["devices"][H100]["lanewalk"] if r["mode"] == mode and r["elements_per_row"] == length
                and r["gather"] == gather and r["warps_per_sm"] == warps)


def _l2_busy(r: dict) -> float:
    return r["duration_ns"] * 1e-9 * r["l2_pct"] / 100.0


@pytest.mark.parametrize("length", [16, 32, 128])
def test_coalescing_a_per_lane_walk_unloads_the_l1_not_the_l2(length):
    """A thread walking its own row reuses each sector from L1 over its next steps: while its lines
    fit (8-32 warps per SM) the L2 is asked for the same sectors as by the column-major walk, and
    what coalescing removes is the L1's work (a line per lane per step)."""
    for warps in (8, 16, 32):
        scalar, ell = _lanewalk("scalar", length, False, warps), _lanewalk("ell", length, False, warps)
        assert scalar["sectors_per_request"] > 25 and ell["sectors_per_request"] < 4.5
        assert scalar["l2_sectors"] == pytest.approx(ell["l2_sectors"], rel=0.1)
        assert scalar["l1_pct"] > 75 and ell["l1_pct"] < 15


def test_a_walk_that_overflows_the_l1_sends_its_excess_to_dram():
    """At 64 warps per SM the lanes' lines no longer survive until their next steps: DRAM moves
    1.6x the bytes of the coalesced walk, the L2 is asked for more sectors."""
    scalar, ell = _lanewalk("scalar", 32, False, 64), _lanewalk("ell", 32, False, 64)
    assert scalar["dram_read_bytes"] > 1.4 * ell["dram_read_bytes"]
    assert scalar["l2_sectors"] > 1.15 * ell["l2_sectors"]


def test_a_gather_stays_uncoalesced_when_the_walk_is_coalesced():
    """ell with a gather: 4 + 4 + s_x sectors over 3 loads per element; s_x is still ~31."""
    with_gather, without = _lanewalk("ell", 32, True, 32), _lanewalk("ell", 32, False, 32)
    gather_sectors = 3 * with_gather["sectors_per_request"] - 2 * without["sectors_per_request"]
    assert gather_sectors > 24


def test_the_l2_pays_a_fill_per_sector_dram_reads():
    t = device_table(H100)
    assert 1.0 < t.l2_dram_sector / t.l2_load_sector < 3.0


@pytest.mark.parametrize("length", [4, 16, 32, 128])
def test_the_l2_model_predicts_the_coalesced_walk(length):
    """DeviceTable.l2_kept on the scalar walk's measured L2 busy time, DRAM reads and request and
    DRAM keeps (the column-major walk's over the scalar's) lands within 25% of the L2 busy time
    the column-major walk measured; the old pricing (every requested sector reaches the L2)
    would have predicted less than half of it for L >= 16."""
    t = device_table(H100)
    for warps in (8, 16, 32, 64):
        scalar, ell = _lanewalk("scalar", length, False, warps), _lanewalk("ell", length, False, warps)
        ratio = (ell["requests"] * ell["sectors_per_request"]) / (scalar["requests"] * scalar["sectors_per_request"])
        got = t.l2_kept(_l2_busy(scalar), scalar["dram_read_bytes"] / 32.0, ratio,
                        min(1.0, ell["dram_read_bytes"] / scalar["dram_read_bytes"]))
        assert got == pytest.approx(_l2_busy(ell), rel=0.25)
        if length >= 16:
            assert _l2_busy(scalar) * ratio < 0.5 * _l2_busy(ell)


def test_gathers_are_the_loads_whose_address_was_loaded():
    """spmv_csr_scalar: val[j], col[j] and x[col[j]] in every unrolled copy (main loop, remainder,
    tail), and the two row_ptr loads: exactly the x loads are gathers."""
    ctx = _context("spmv_csr_scalar")
    g = gathers(ctx)
    loads = [i for i in ctx.blames[0].function.instructions
             if i.memory is not None and i.memory.space == "global" and i.memory.load]
    assert (len(loads) - 2) == 3 * len(g)
    # a gather's address register was written from a loaded col value (IMAD.WIDE R, Rcol, 0x4, Rx)
    assert all(ctx.pcs[o].sectors for o in g)
    assert remappable_excess(ctx, next(iter(g))) == 0.0
    assert max(remappable_excess(ctx, i.offset) for i in loads) > 0.8


def test_spmv_coalescing_is_bounded_by_what_it_cannot_unload():
    """spmv_csr_scalar's L2 at 90% is mostly fills (DRAM at 57%) and the gather's requests, which
    coalescing val/col does not remove, and the walk's excess sectors never reached it (the L1
    serves a lane's later steps): the coalesced code asks the L2 for as much as the original
    (tests/analysis/test_l2_seen.py). The unit model's bound is the L2 near 1.06x, not the 4.8x the
    L2's requested sectors promised (1.6x before the L2 counted only what the L1 misses; sell
    measured 1.08x, the warp-per-row vector 0.89x)."""
    m = model(_context("spmv_csr_scalar"))
    assert m.keep["l2"] > 0.95
    assert m.bound_unit == "l2" and 1.0 < m.bound < 1.15
    a, _ = _advice(ROOT / "kernels" / "spmv_csr_scalar" / "recorded" / "ncu.gpabundle", "spmv")
    assert a.estimated_speedup <= m.bound + 1e-3


# --- gathers sharing an index (benchmarks/coalescing/fieldgather_probe.cu) ----------------------

def _fieldgather(mode: str, foot: str) -> dict:
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return next(r for r in d["devices"][H100]["fieldgather"] if r["mode"] == mode and r["foot"] == foot)


def test_merging_gathers_divides_their_dram_bytes_and_the_time_follows():
    """From DRAM, each 4-byte random gather reads 64 bytes; one record gather reads them once; the
    time follows the DRAM bytes (the DRAM at 60-67% of its peak in every configuration)."""
    soa = [_fieldgather(f"soa{k}", "dram") for k in (1, 2, 3, 4)]
    step = [b["dram_read_bytes"] - a["dram_read_bytes"] for a, b in zip(soa, soa[1:])]
    per_gather = sum(step) / len(step) / soa[0]["threads"]
    assert 48 <= per_gather <= 72
    aos4 = _fieldgather("aos4", "dram")
    assert aos4["dram_read_bytes"] < 0.3 * soa[3]["dram_read_bytes"]
    assert soa[3]["median_ms"] / aos4["median_ms"] == pytest.approx(
        soa[3]["dram_read_bytes"] / aos4["dram_read_bytes"], rel=0.15)
    assert all(55 < r["dram_pct"] < 75 for r in soa + [aos4, _fieldgather("aos2", "dram")])


def test_index_groups_find_the_fields_of_one_index():
    """particle_gather: ex[c], ey[c], ez[c] are one group of three 4-byte gathers of the loaded c; the
    merge estimate is the DRAM bytes saved (two gathers' of three)."""
    from gpa_lsp.analysis.gathers import index_groups, merge_estimate
    ctx = _context("particle_gather", "cupti")
    groups = index_groups(ctx)
    assert [len(g) for g in groups] == [3]
    assert {ctx.location(o).line for o in groups[0]} == {19, 20, 21}
    est, merged = merge_estimate(ctx)
    assert merged == 2 and 1.5 < est < 2.2


def test_no_merge_estimate_where_dram_does_not_hold_the_time():
    """btree_search's node fields are gathers of one index too, but its DRAM runs at 17%: the
    probe's gathers ran it at 60% or more, so merging has no DRAM time to save there."""
    from gpa_lsp.analysis.gathers import index_groups, merge_estimate
    ctx = _context("btree_search")
    assert index_groups(ctx) and merge_estimate(ctx) is None


# --- an uneven one-wave grid (gemv_resident, calibration, recorded on the H200) -----------------

def test_an_uneven_grid_is_counted_by_its_busiest_sms():
    """gemv_rows' code at 25 MB: 160 blocks on 132 SMs, two on 28 of them. The profile's L1 share
    (56%) averages the SMs with one block over the time the SMs with two set; counted by the
    busiest SMs (160 / 2 = 80 SMs' worth) it is gemv_rows' 93%. The warp-per-row rewrite (32x the
    blocks, several waves) spreads the work evenly: the unit model holds and the estimate is no
    longer the matched stalls' 2.06x (6.22x measured by kernel durations, 3.96x by events)."""
    from gpa_lsp.analysis.coalescing import busy_sms
    from gpa_lsp.analysis.lanewalk import rewrite_spread
    ctx = _context("gemv_resident")
    assert ctx.launch.blocks == 160 and ctx.device.sm_count == 132
    assert busy_sms(ctx) == 80.0 and busy_sms(ctx, 32 * 160) == 132.0 and busy_sms(ctx, 100) == 100.0
    assert rewrite_spread(ctx) == pytest.approx(80 / 132)
    assert 88 < ctx.kernel.throughput.pct("l1") * 132 / busy_sms(ctx) < 96
    a, _ = _advice(ROOT / "kernels/gemv_resident/recorded/ncu.gpabundle", "gemv_rows")
    assert 6.0 < a.estimated_speedup < 10.0
    assert "160 blocks sit unevenly on the 132 SMs (2 on 28 of them" in a.suggestion
    # gemv_rows itself: 256 blocks, two on 124 SMs: near even, not said
    b, _ = _advice(ROOT / "kernels/gemv_rows/recorded/ncu.gpabundle", "gemv_rows")
    assert busy_sms(_context("gemv_rows")) == 128.0 and "unevenly" not in b.suggestion
