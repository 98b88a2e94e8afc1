"""Work loops (analysis/worksplit.py) and Block Increase's advice to cut them into strips.

The loops are found on nvcc's own output (kernels compiled here): the splittable shape, and the
negative controls a strip cut must not be advised on (reductions, data-dependent and per-thread
trip counts, values carried through shared memory or registers). The advice is checked on the
calibration case kernels/zscore_features recorded on the H100 with both collectors, and on its
`strips` variant recorded there too (recorded/strips/: one full wave, nothing to advise).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from gpa_lsp import config as gpa_config
from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.optimizers.block_increase import KERNEL_RAMP_NS, STRIPS_DRAM_PCT
from gpa_lsp.analysis.worksplit import work_loops
from gpa_lsp.sass import load_program

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "kernels" / "zscore_features"

LOOPS = r"""
__global__ void rows(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = 0; y < h; ++y) out[y * w + x] = in[y * w + x] * 2.f + 1.f;
}
__global__ void planes(const float* in, float* out, int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
  const size_t plane = size_t(nx) * ny;
  size_t i = plane + size_t(y) * nx + x;
  for (int z = 1; z < nz - 1; ++z, i += plane) out[i] = in[i - plane] + in[i + plane] - 2.f * in[i];
}
__global__ void colsum(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  float s = 0.f;
  for (int y = 0; y < h; ++y) s += in[y * w + x];
  out[x] = s;
}
__global__ void colmax(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  float s = -1e30f;
  for (int y = 0; y < h; ++y) s = fmaxf(s, in[y * w + x]);
  out[x] = s;
}
__global__ void csr_rows(float* y, const int* rowptr, const float* val, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  for (int k = rowptr[r]; k < rowptr[r + 1]; ++k) y[k] = val[k] * 2.f;
}
__global__ void triangle(float* out, const float* in, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  for (int y = 0; y < x; ++y) out[y * w + x] = in[y * w + x] * 2.f;
}
__global__ void grid_stride(float* out, const float* in, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = 2.f * in[i];
}
__global__ void shared_carry(float* out, const float* in, int w, int h) {
  __shared__ float t[256];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  t[threadIdx.x] = 0.f;
  for (int y = 0; y < h; ++y) {
    __syncthreads();
    const float v = t[(threadIdx.x + 1) % blockDim.x] + in[y * w + x];
    __syncthreads();
    t[threadIdx.x] = v;
    out[y * w + x] = v;
  }
}
__global__ void first_match(int* out, const float* in, int w, int h, float key) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  for (int y = 0; y < h; ++y)
    if (in[y * w + x] == key) { out[x] = y; return; }
}
__global__ void recurrence(float* a, int w, int h, int d) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = d; y < h; ++y) a[y * w + x] = 0.5f * a[(y - d) * w + x] + 1.f;
}
__global__ void pointers(float* const* rows, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = 0; y < h; ++y) rows[y][x] = in[y * w + x] * 2.f;
}
__global__ void chase(int* out, const int* next, int steps) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  int p = x;
  for (int s = 0; s < steps; ++s) p = next[p];
  out[x] = p;
}
"""


def line_of(text: str, needle: str) -> int:
    return next(n for n, l in enumerate(text.splitlines(), 1) if needle in l)


@pytest.fixture(scope="module")
def kernels(build_cubin):
    program = load_program(build_cubin(LOOPS, name="work_loops"))
    return {f.demangled.split("(")[0]: f for f in program.functions if f.entry}


@pytest.mark.parametrize("name,needle", [("rows", "for (int y = 0; y < h; ++y) out"),
                                         ("planes", "for (int z = 1; z < nz - 1")])
def test_splittable_loops_found(kernels, name, needle):
    """Row and plane loops with a kernel-argument trip count and only counters and addresses
    carried: every version nvcc makes of the loop (unrolled body, remainder) is one."""
    found = work_loops(kernels[name])
    assert found and {w.line for w in found} == {line_of(LOOPS, needle)}
    assert len(found) == len(kernels[name].loops)


@pytest.mark.parametrize("name,why", [
    ("colsum", "a sum carried around the back edge (FADD)"),
    ("colmax", "a maximum carried around the back edge (FMNMX)"),
    ("csr_rows", "the trip count comes from memory (row pointers)"),
    ("triangle", "the trip count comes from the thread index"),
    ("grid_stride", "the trip count depends on the thread (a grid-stride loop, advised as such)"),
    ("shared_carry", "iterations hand values on through shared memory"),
    ("chase", "a loaded value carried around the back edge (pointer chase)"),
    ("first_match", "an early return on a loaded value: the trip count comes from memory"),
    ("recurrence", "loads and stores through one pointer: an iteration may read what an earlier one wrote"),
    ("pointers", "stores through pointers loaded from memory: they may point anywhere"),
])
def test_loops_not_split(kernels, name, why):
    assert kernels[name].loops, name
    assert work_loops(kernels[name]) == (), why


def _advice(bundle: Path, case: Path = CASE):
    report = advise_bundle(bundle, config=gpa_config.load(case))
    return next(k for k in report.kernels if "standardize" in k.demangled).advice


# estimate / achieved of the advised cut on the case (132 strips, measured 45.0x with CUDA events, whose
# ~9 us on a 30 us kernel the estimate does not model: 54-60x by the profiled durations). The two
# bundles differ in the original's measured DRAM share: 1.34% with CUPTI's counters, 0.97% under ncu
# (which flushes the L2 before its pass), so ncu's figure is higher.
WITHIN = {"cupti": (0.85, 1.15), "ncu": (1.0, 1.4)}


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_zscore_features_advises_strips_on_the_row_loop(collector):
    """The calibration case: 32 blocks of 64 threads, each walking 4096 rows. Block Increase ranks
    first, on the row loop (line 13), says to cut it into 132 strips over blockIdx.y (4224 blocks,
    one full wave), with no quick fix (the launch is host code), and its estimate lies within the
    collector's margin (WITHIN) of what the `strips` variant measured on the H100."""
    meta = tomllib.loads((CASE / "case.toml").read_text())
    advice = _advice(CASE / "recorded" / f"{collector}.gpabundle")
    top = advice[0]
    assert top.optimizer == "block_increase"
    assert top.location.line == meta["loop_line"] == 13
    assert "132 strips" in top.suggestion and "blockIdx.y" in top.suggestion
    assert "4224 blocks" in top.suggestion and "one full wave" in top.suggestion
    assert top.fix is None
    timings = json.loads((ROOT / "benchmarks" / "accuracy" / "timings.json").read_text())["results"]
    ms = {r["variant"]: r["median_ms"] for r in timings if r["case"] == "zscore_features"}
    achieved = ms["original"] / ms["strips"]
    lo, hi = WITHIN[collector]
    assert lo <= top.estimated_speedup / achieved <= hi, (top.estimated_speedup, achieved)
    # the other block_increase variant, 32-thread blocks (the same warps spread), is what the old
    # fixed-work rule would have offered: 1.01x measured; nothing here suggests it
    assert "block size" not in top.suggestion.lower()


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_a_full_wave_of_strips_gets_nothing(collector):
    """The `strips` variant recorded on the H100: 4224 blocks fill the device, and its loop's trip
    count comes from blockIdx.y: no Block Increase, in any form."""
    advice = _advice(CASE / "recorded" / "strips" / f"{collector}.gpabundle")
    assert advice, "the strips recording has advice of its own"
    assert "block_increase" not in [a.optimizer for a in advice]


def test_the_strips_ceiling_and_ramp_are_what_the_sweep_measured():
    """STRIPS_DRAM_PCT and KERNEL_RAMP_NS read back from benchmarks/waves/strips.cu's ncu sweep: no
    run of strips went above the ceiling (by more than ncu's noise), the long runs came within 3 points
    of it, and each full-wave run's time is its bytes at the ceiling plus the ramp (the ramp fitted
    as the mean of the three heights' remainders, each within 2 us of it)."""
    runs = [json.loads(line) for line in (ROOT / "benchmarks" / "waves" / "strips_ncu.h100.jsonl").read_text().splitlines()]
    assert max(r["dram_pct"] for r in runs) <= STRIPS_DRAM_PCT + 0.5
    assert max(r["dram_pct"] for r in runs if r["ncu_duration_us"] > 100) >= STRIPS_DRAM_PCT - 3
    wave = [r for r in runs if r["blocks"] == 4224]
    assert sorted(r["rows"] for r in wave) == [1024, 4096, 16384]
    rest = [1000 * r["ncu_duration_us"] * (1 - r["dram_pct"] / STRIPS_DRAM_PCT) for r in wave]
    assert sum(rest) / len(rest) == pytest.approx(KERNEL_RAMP_NS, rel=0.02)
    assert all(abs(x - KERNEL_RAMP_NS) < 2000 for x in rest), rest
