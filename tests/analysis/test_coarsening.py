"""Narrow coalesced streams (analysis/coarsening.py): what k elements per thread with 16-byte
accesses gain, and what an arithmetic change can gain while the loads in flight hold DRAM.

Grounding, all recorded on the GPU: the loop-free probe's rows (gpa_lsp/data/coalescing.json,
benchmarks/coalescing/loopfree_probe.cu) for the overlap of DRAM and issue (``lfalu``) and for the
share per byte loaded (``lf_mM``); the calibration cases channel_affine_nchw (float4 measured 1.72x,
the divisions' removal 0.96-1.04x) and saxpy_stream (vector4 1.03x). Checked after on validation, not
the source of either rule: lut_equalize (uchar4_float4 2.06x; Strength Reduction's image_grid 0.98x).
"""

from __future__ import annotations

import math

import pytest

from bundle_contexts import ROOT, case_hottest, measured_speedup
from case_context import case_context
from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.coarsening import _overlap, coarsening, stream
from gpa_lsp.analysis.coalescing import OVERLAP_P
from gpa_lsp.analysis.probe_tables import coalescing_devices

DEVICES = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")


def _advice(case: str, collector: str = "ncu"):
    report = advise_bundle(ROOT / "kernels" / case / "recorded" / f"{collector}.gpabundle")
    return max(report.kernels, key=lambda k: k.samples).advice


def test_overlap_arithmetic():
    """Arithmetic on hand-written shares (a unit test, no profile): a DRAM share of 0.6 and an issue
    share of 0.8 of the time overlap to 1.0 at p = 2; none of either is the other."""
    assert OVERLAP_P == 2.0
    assert _overlap(0.6, 0.8) == pytest.approx(1.0)
    assert _overlap(0.7, 0.0) == pytest.approx(0.7)


@pytest.mark.parametrize("device", DEVICES)
def test_the_overlap_predicts_the_probe_with_issue_work_beside_its_loads(device):
    """The loop-free probe's kernels with 16 to 128 FFMAs per thread beside their one DRAM load
    (``lfalu``), at 32 and 64 warps per SM: their time is the load-only kernel's (``lf_m1``, same warps)
    and their issue time (duration x issue share) overlapped at p = 2, within 15% for every row;
    the larger of the two is up to 20% short, their sum up to 60% over."""
    rows = coalescing_devices()[device]["loopfree"]
    base = {r["warps_per_sm"]: r["duration_ns"] for r in rows if r["config"] == "lf_m1"}
    worst_p = worst_max = worst_sum = 0.0
    for r in rows:
        if not r["config"].startswith("lfalu") or r["warps_per_sm"] < 32:
            continue
        mem, issue = base[r["warps_per_sm"]], r["duration_ns"] * r["issue_pct"] / 100.0
        t = r["duration_ns"]
        worst_p = max(worst_p, abs(_overlap(mem, issue) / t - 1.0))
        worst_max = max(worst_max, abs(max(mem, issue) / t - 1.0))
        worst_sum = max(worst_sum, abs((mem + issue) / t - 1.0))
    assert worst_p < 0.15
    assert worst_p < worst_max < worst_sum


@pytest.mark.parametrize("device", DEVICES)
def test_loads_in_flight_set_the_share_per_byte_loaded(device):
    """Little's law counts the loads in flight: the loop-free probe's kernels loading 1, 2 or 4 floats
    per thread (and storing one) at the same bytes of loads in flight per SM (2 to 8 KB) reach the same
    DRAM share *per byte loaded* (within 8%), while their total shares differ by a quarter and more (a
    kernel that stores as much as it loads moves twice the bytes per byte in flight, one that loads
    four floats per store 1.25 times)."""
    rows = [r for r in coalescing_devices()[device]["loopfree"] if r["config"].startswith("lf_m")]
    by_f: dict[float, list[tuple[float, float]]] = {}
    for r in rows:
        m = int(r["config"].rsplit("_m", 1)[1])
        f = r["warps_per_sm"] * m * 128.0
        read = r["dram_read_bytes"] / (r["dram_read_bytes"] + r["dram_write_bytes"])
        by_f.setdefault(f, []).append((r["dram_pct"], r["dram_pct"] * read))
    compared = 0
    for f, got in by_f.items():
        if len(got) < 2 or f > 8192:     # above 8 KB the shares near DRAM's peak
            continue
        totals, per_load = [g[0] for g in got], [g[1] for g in got]
        assert max(per_load) / min(per_load) < 1.08, (f, got)
        assert max(totals) / min(totals) > 1.25, (f, got)
        compared += 1
    assert compared >= 2


def test_channel_affine_widening_ranks_first_and_the_division_is_held_by_dram():
    """Calibration channel_affine_nchw (one float per thread, two 64-bit divisions for the channel,
    issue at 77%, DRAM at 50%): 4 elements per thread with float4 measured 1.72x; removing the
    divisions 0.96x (grid3d) and 1.04x (magic_div). Memory Transaction Reduction ranks first, priced
    1.5-1.75x, and says what to change on the stream's lines; Strength Reduction is held to what the
    issue cut leaves (the stream's DRAM time stays), under 1.05x: marginal, not recommended."""
    advice = _advice("channel_affine_nchw")
    top = advice[0]
    assert top.optimizer == "memory_transaction_reduction"
    assert 1.5 <= top.estimated_speedup <= 1.75
    assert "4 consecutive elements per thread" in top.suggestion and "lines 21, 23" in top.suggestion
    sr = next(a for a in advice if a.optimizer == "strength_reduction")
    assert sr.estimated_speedup < 1.05 and sr.bounded_by == "stream"
    assert "loads in flight" in sr.bound_text()


def test_channel_affine_stream_facts():
    """What the estimate rests on: the in[i] load and the out[i] store are the streams (the
    ``scale[c]``/``shift[c]`` broadcasts are shared by the 4 elements: their L2 sectors fall by 4,
    a fifth of the kernel's); three quarters of the instructions are per thread (the divisions),
    and the stream (DRAM at 4x the loads in flight) bounds the time after, the L2 close behind."""
    ctx = case_context("channel_affine_nchw")
    s = stream(ctx)
    assert s is not None and not s.looped and len(s.accesses) == 2
    c = coarsening(ctx)
    assert c.elements == 4 and 0.2 < c.issue_ratio < 0.3 and c.bound_unit == "stream"
    assert 0.5 < c.after["l2"] < 0.56 < c.after["stream"]
    assert 1.0 < s.now < 1.3      # the overlap explains the measured time


@pytest.mark.parametrize("case,elements,low,high", [
    # bytes: 2, 4, 8, 16 per thread measured 1.75x, 2.96x, 4.52x, 5.19x
    ("threshold_u8", 16, 4.2, 5.2),
    # halves: 2, 4, 8, 16 per thread measured 1.72x, 2.54x, 2.89x, 2.72x (16: two 16-byte accesses)
    ("scale_rows_half", 8, 2.7, 3.2),
])
def test_one_16_byte_access_per_stream_and_thread(case, elements, low, high):
    """Calibration threshold_u8 and scale_rows_half (one narrow element per thread, the image or row
    from a division): the best measured variant moves each stream with one 16-byte access per thread
    (16 bytes, 8 halves), so that is the k priced; Memory Transaction Reduction ranks first within
    13% of it, on the stream's line."""
    c = coarsening(case_context(case))
    assert c is not None and c.elements == elements
    top = _advice(case)[0]
    assert top.optimizer == "memory_transaction_reduction" and low <= top.estimated_speedup <= high
    assert top.location.line == 19 and "16-byte vector access" in top.suggestion


def test_a_stream_at_dram_peak_gains_nothing_from_widening():
    """Calibration saxpy_stream (a grid-stride loop at 82% of DRAM's peak): vector4 measured 1.03x;
    the widening is priced under 1.05x (marginal)."""
    c = coarsening(case_context("saxpy_stream"))
    assert c is not None and 1.0 <= c.estimate < 1.05


@pytest.mark.parametrize("case", ["filter2d_5x5", "conv2d_nchw", "heat2d_naive"])
def test_a_stencils_taps_are_not_a_stream_the_elements_share(case):
    """A stencil's neighbouring taps are loads the k elements would not share (coarsening it is
    register tiling, another change): no stream, no widening estimate, no issue-cut bound."""
    ctx = case_context(case)
    assert stream(ctx) is None and coarsening(ctx) is None


def test_lut_equalize_validation():
    """Validation lut_equalize (written blind, not the source of either rule): uchar in, float out
    through a 256-entry table; uchar4_float4 measured 2.06x, image_grid (no division) 0.98x. Memory
    Transaction Reduction first within 10% of 2.06x; Strength Reduction under 1.08x."""
    advice = _advice("lut_equalize")
    assert advice[0].optimizer == "memory_transaction_reduction"
    assert math.isclose(advice[0].estimated_speedup, 2.06, rel_tol=0.10)
    sr = next(a for a in advice if a.optimizer == "strength_reduction")
    assert sr.estimated_speedup < 1.08 and sr.bounded_by == "stream"


def test_a_loops_stream_gets_no_issue_cut_bound():
    """Calibration permute_divmod (a grid-stride loop, the output index from six run-time divisions):
    removing the divisions measured 1.80x. The overlap of DRAM and issue was measured on loop-free
    kernels only, and a loop's next load can be in flight while this element computes, so Strength
    Reduction there is not held by the stream (the bound would have said 1.62x)."""
    ctx = case_context("permute_divmod")
    s = stream(ctx)
    assert s is not None and s.looped
    sr = next(a for a in _advice("permute_divmod") if a.optimizer == "strength_reduction")
    assert sr.bounded_by != "stream" and sr.estimated_speedup > 1.7


@pytest.mark.parametrize("case, channels, line, best", [("pcm_deinterleave", 6, 25, "coarsen_2"),
                                                        ("yuyv_to_planar", 2, 30, "coarsen_2")])
def test_an_interleaved_array_of_narrow_channels_is_a_stream(case, channels, line, best):
    """One thread per planar output reads one channel of an interleaved array of 16-bit samples (6
    channels, 12 sectors a request) or packed YUYV bytes (2 sectors a request): each line is read
    once per channel by other threads, so DRAM moves it once and the L2 serves it C times. The
    float stores are the coalesced stream. Coarsening takes 4 positions with all C channels per
    thread (one float4 store per plane): pcm_deinterleave measured 2.19x (coarsen_4) and 2.22x
    (coarsen_2), yuyv_to_planar 3.09x and 3.12x; priced 2.57x and 3.29x, first, at the load."""
    ctx, _ = case_hottest(case, "ncu")
    s = stream(ctx)
    assert s is not None and sorted(s.channels.values())[-1] == channels
    c = coarsening(ctx)
    assert c.elements == 4 and c.channels == channels
    achieved = measured_speedup(case, best)
    a = _advice(case)[0]
    assert a.optimizer == "memory_transaction_reduction" and a.location.line == line
    assert f"{channels} interleaved channels" in a.suggestion
    assert abs(a.estimated_speedup - achieved) / achieved < 0.2
    # CUPTI records no sectors: nothing is priced there
    assert "memory_transaction_reduction" not in [x.optimizer for x in _advice(case, "cupti")[:1]]
