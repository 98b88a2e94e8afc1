"""Waves, grid-stride loops and the launch-shape advice (analysis/waves.py, Block and Thread Increase).

Grid-stride loops are found on nvcc's own output (kernels compiled here); the advice is checked on
bundles recorded on the H100 (kernels/*/recorded); the model's premise -- no gain past a full
wave, more warps for the same work until one -- on the microbenchmark measured on the H100
(benchmarks/waves/h100.jsonl).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from case_context import case_context

from gpa_lsp import config as gpa_config
from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.occupancy import device_for
from gpa_lsp.analysis.optimizers.block_increase import KERNEL_RAMP_NS, BlockIncrease, kernel_duration_ns, kernel_waves
from gpa_lsp.analysis.waves import (full_wave_issue_speedup, full_wave_memory_bound, grid_stride_loop,
                                    grid_stride_loops, grown, waves)
from gpa_lsp.profile.model import Launch
from gpa_lsp.sass import load_program

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"

LOOPS = r"""
__global__ void thread_stride(const float* x, float* out, int n) {
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += x[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void block_stride(const float* x, float* out, int nrows, int len) {
  for (int row = blockIdx.x; row < nrows; row += gridDim.x) {
    float s = 0.f;
    for (int k = threadIdx.x; k < len; k += blockDim.x) s += x[row * len + k];
    out[row * blockDim.x + threadIdx.x] = s;
  }
}
__global__ void block_loop(const float* x, float* out, int len) {
  float s = 0.f;
  for (int k = threadIdx.x; k < len; k += blockDim.x) s += x[blockIdx.x * len + k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void one_item(const float* x, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int width = gridDim.x * blockDim.x;
  if (i < n) out[i] = x[i] * float(width);
}
"""


def line_of(text: str, needle: str) -> int:
    return next(n for n, l in enumerate(text.splitlines(), 1) if needle in l)


@pytest.fixture(scope="module")
def loops(build_cubin):
    program = load_program(build_cubin(LOOPS, name="waves_loops"))
    return {f.demangled.split("(")[0]: f for f in program.functions if f.entry}


def test_grid_stride_loops_found_in_sass(loops):
    got = grid_stride_loop(loops["thread_stride"])
    assert got is not None and got.line == line_of(LOOPS, "i += gridDim.x * blockDim.x")
    # a block-level stride (one block per row, rows shared by the grid), found at the outer loop
    got = grid_stride_loop(loops["block_stride"])
    assert got is not None and got.line == line_of(LOOPS, "row += gridDim.x")
    assert len(grid_stride_loops(loops["block_stride"])) == 1    # the inner blockDim loop is not one


def test_loops_without_grid_stride(loops):
    # a stride of blockDim shares a block's own work among its threads, not the grid's
    assert grid_stride_loop(loops["block_loop"]) is None
    # gridDim read outside any loop
    assert grid_stride_loop(loops["one_item"]) is None


H100 = device_for(90, "NVIDIA H100 80GB HBM3")


def test_waves_from_the_resources_of_a_block():
    # 1024 threads: 2 blocks per SM (64 warp slots); 64 blocks are a quarter of a 264-block wave
    w = waves(H100, Launch((64, 1, 1), (1024, 1, 1)), registers=32)
    assert (w.resident, w.limiter, w.capacity) == (2, "threads", 264)
    assert w.waves == pytest.approx(64 / 264) and not w.fills_device
    assert (w.busy_sms, w.warps_per_busy_sm, w.full_warps) == (64, 32, 64)
    # 64 registers x 64 threads: registers allow 32 warps = 16 blocks of 2 warps
    w = waves(H100, Launch((132, 1, 1), (64, 1, 1)), registers=64)
    assert (w.resident, w.limiter, w.warps_per_busy_sm) == (16, "registers", 2)
    # 1.33 waves: fills the device, the last wave a third full
    w = waves(H100, Launch((1056, 1, 1), (256, 1, 1)), registers=40)
    assert w.resident == 6 and w.fills_device and w.tail_fill == pytest.approx(264 / 792)
    assert grown(w, 10 ** 6) == w                   # never more than a wave, never fewer blocks


def advice_of(case: str, collector: str | None = None):
    meta = tomllib.loads((KERNELS / case / "case.toml").read_text())
    bundle = KERNELS / case / "recorded" / f"{collector or meta.get('collector', 'cupti')}.gpabundle"
    report = advise_bundle(str(bundle), config=gpa_config.load(KERNELS / case))
    kernel = next(k for k in report.kernels if meta["kernel"] in k.name)
    return {a.optimizer: a for a in kernel.advice}, [a.optimizer for a in kernel.advice]


def test_block_increase_advises_a_full_wave_for_a_grid_stride_kernel():
    # particle_blocks (calibration): 64 blocks of 1024 with a grid-stride particle loop; a full wave
    # is 264 blocks, every SM with 64 warps: issue rate of 132 SMs at 16 warps per scheduler over
    # 64 SMs at 8 (measured 78% issue): ~2.5x, below the L1 bound 100/32%
    by, order = advice_of("particle_blocks")
    a = by["block_increase"]
    assert order[0] == "block_increase"
    assert 2.2 <= a.estimated_speedup <= 2.8
    assert "264 blocks" in a.suggestion and "grid-stride loop at line 14" in a.suggestion


def test_a_grown_grid_stride_kernel_pays_the_ramp():
    # the full wave's gain (issue or DRAM roof) scales the kernel's work, not its fixed ramp and
    # tail (KERNEL_RAMP_NS, measured with the strips sweep on zscore_features): particle_blocks
    # (calibration, 964 us) 2.52x by issue -> 2.49x
    ctx = case_context("particle_blocks", "cupti")
    opt = BlockIncrease()
    m = opt.match(ctx)
    w = kernel_waves(ctx)
    gain = min(full_wave_issue_speedup(w, grown(w, w.capacity), ctx.active / ctx.total,
                                       ctx.device.schedulers_per_sm),
               full_wave_memory_bound(ctx, w, grown(w, w.capacity)))
    now = kernel_duration_ns(ctx)
    assert opt.estimate(ctx, m) == pytest.approx(now / (now / gain + KERNEL_RAMP_NS))
    assert 0.97 * gain < opt.estimate(ctx, m) < gain


def test_no_block_increase_when_the_grid_fills_the_device():
    # grid-stride kernels launched with one wave (saxpy_stream: 1056 = 132 x 8) or more
    # (histogram_atomic: 1.94 waves): more blocks would add waves, not warps
    for case in ("saxpy_stream", "histogram_atomic"):
        by, _ = advice_of(case)
        assert "block_increase" not in by, case


def test_trip_count_bounds_the_useful_blocks():
    # dot_runtime_unroll's batch loop runs 3 iterations per warp (ncu's executed counts): 396 blocks
    # get work, not a wave of 2112; without counts (CUPTI) the full wave is the bound
    with_counts, _ = advice_of("dot_runtime_unroll", "ncu")
    without, _ = advice_of("dot_runtime_unroll", "cupti")
    assert "3.0 iterations per warp" in with_counts["block_increase"].suggestion
    assert with_counts["block_increase"].estimated_speedup < 0.6 * without["block_increase"].estimated_speedup


def test_trip_count_sums_the_versions_of_a_loop():
    # nvcc versions particle_blocks' particle loop (one copy for an empty pixel loop, never run):
    # 2^20 particles over 64 x 1024 threads are 16 iterations per warp, all in the copies that run
    by, _ = advice_of("particle_blocks", "ncu")
    assert "16.0 iterations per warp" in by["block_increase"].suggestion


def test_full_wave_issue_arithmetic():
    # 16 SMs x 8 warps (2 per scheduler, issuing 7/16 of cycles: q = 1/4) -> 132 SMs x 64 warps
    # (16 per scheduler): 132 x 4 x (1 - (3/4)^16) over 16 x 4 x 7/16
    now = waves(H100, Launch((16, 1, 1), (256, 1, 1)), registers=32)
    got = full_wave_issue_speedup(now, grown(now, now.capacity), 7 / 16, 4)
    assert got == pytest.approx(132 * (1 - 0.75 ** 16) / (16 * 7 / 16), rel=1e-6)
    # 2 warps per SM use 2 schedulers: a full wave of 32 warps brings the other two
    now = waves(H100, Launch((132, 1, 1), (64, 1, 1)), registers=64)
    got = full_wave_issue_speedup(now, grown(now, now.capacity), 0.2, 4)
    assert got == pytest.approx(4 * (1 - 0.8 ** 8) / (2 * 0.2), rel=1e-6)


def test_thread_increase_only_where_the_block_size_limits():
    # fan2_threads: 16-thread blocks, 32 per SM (the cap) = 32 warps of 64
    by, order = advice_of("fan2_threads")
    assert order[0] == "thread_increase"
    # sw_icache: 64 registers limit it to 32 warps; larger blocks would not fit more
    by, _ = advice_of("sw_icache")
    assert "thread_increase" not in by


def measured(kernel: str) -> dict[int, dict]:
    rows = [json.loads(l) for l in (ROOT / "benchmarks" / "waves" / "h100.jsonl").read_text().splitlines() if l]
    return {r["blocks"]: r for r in rows if r["kernel"] == kernel}


def test_h100_no_gain_past_a_full_wave():
    # the premise of "no Block Increase once the grid fills the device", on the H100's own timings
    for kernel in ("stride_chain", "stride_sum"):
        rows = measured(kernel)
        wave = next(b for b, r in rows.items() if abs(r["waves"] - 1.0) < 1e-6)
        at_wave = rows[wave]["ms"]
        for b, r in rows.items():
            if r["waves"] >= 1.0 and abs(r["waves"] - round(r["waves"])) < 1e-6:   # whole waves
                assert r["ms"] >= 0.9 * at_wave, (kernel, b)
        assert rows[min(rows)]["ms"] > 10 * at_wave, kernel      # while below a wave it gained


def test_h100_stride_sum_follows_the_memory_parallelism_curve():
    # waves.full_wave_memory_bound's arithmetic on the measured grid-stride sum: 8 warps x 128 bytes
    # per busy SM, idle SMs' share spread over all 132; every grid up to a wave within 15%
    from gpa_lsp.analysis.parallelism import attainable, curve
    points = curve("NVIDIA H100 80GB HBM3", "read")
    rows = measured("stride_sum")

    def reach(r):
        busy = min(r["blocks"], r["sms"])
        return attainable(points, 128 * 8 * r["blocks"] / busy * busy / r["sms"])

    base = rows[min(rows)]
    for b, r in rows.items():
        if r["waves"] <= 1.0:
            got, want = base["ms"] / r["ms"], reach(r) / reach(base)
            assert abs(want - got) / got < 0.15, (b, got, want)
