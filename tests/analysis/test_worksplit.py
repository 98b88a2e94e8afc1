"""Work loops (analysis/worksplit.py) and Block Increase's advice to cut them into strips.

The loops are found on nvcc's own output (kernels compiled here): the splittable shape, and the
negative controls a strip cut must not be advised on (reductions, data-dependent and per-thread
trip counts, values carried through shared memory or registers).
"""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.worksplit import work_loops
from gpa_lsp.sass import load_program

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
])
def test_loops_not_split(kernels, name, why):
    assert kernels[name].loops, name
    assert work_loops(kernels[name]) == (), why
