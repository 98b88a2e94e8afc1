"""The structural patterns behind the estimate-calibration rules, on real nvcc output.

Each kernel is compiled with nvcc and analysed with no samples: the tests check
what the rules recognise in its SASS (a shared-memory tree between barriers, a
loop with a barrier, the control of a loop around a local array). The one
hand-written number is in the issue-bound arithmetic test.
"""

from __future__ import annotations

import math

import pytest

from gpa_lsp.analysis.advisor import build_context
from gpa_lsp.analysis.deletion import dead_code
from gpa_lsp.analysis.estimate import issue_bound
from gpa_lsp.analysis.occupancy import device_for
from gpa_lsp.analysis.optimizers.local_array import _control
from gpa_lsp.analysis.optimizers.loop_unrolling import has_barrier
from gpa_lsp.analysis.optimizers.warp_balance import shared_tree
from gpa_lsp.analysis.sources import make_reader
from gpa_lsp.profile.model import Kernel
from gpa_lsp.sass import load_program

TREE = r"""
__global__ void tree(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
"""

TRANSPOSE = r"""
__global__ void transpose(const float* in, float* out, int n) {
  __shared__ float tile[32][33];
  const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  out[(blockIdx.x * 32 + threadIdx.y) * n + blockIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}
"""

LOOPS = r"""
__global__ void with_bar(const float* in, float* out, int steps) {
  __shared__ float s[128];
  float acc = 0.f;
#pragma unroll 1
  for (int k = 0; k < steps; ++k) {
    s[threadIdx.x] = in[k * 128 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) & 127];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void without_bar(const float* in, float* out, int steps) {
  float acc = 0.f;
#pragma unroll 1
  for (int k = 0; k < steps; ++k) acc += in[k * 128 + threadIdx.x] * acc;
  out[threadIdx.x] = acc;
}
"""

LOCAL = r"""
__global__ void arr(const float* in, float* out, int n, int dims) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float row[16];
  for (int j = 0; j < dims; ++j) row[j] = in[j * n + i];
  float acc = 0.f;
  for (int a = 0; a < dims; ++a)
    for (int b = a; b < dims; ++b) acc += row[a] * row[b];
  out[i] = acc;
}
"""


def _ctx(build_cubin, src, name):
    program = load_program(build_cubin(src))
    fn = next(f for f in program.functions if f.entry and name in f.name)
    kernel = Kernel(name=fn.name, demangled=fn.name, cubin="")
    return build_context(program, kernel, [], device_for(90, "H100"), make_reader())


def test_arithmetic_issue_bound():
    # arithmetic only: T=100 samples, the scheduler issued in 40, the sampled warp in 10
    assert issue_bound(100, 40, 10, 0) == pytest.approx(2.5)
    # deleting instructions worth half the warp's issue halves the slots left
    assert issue_bound(100, 40, 10, 5) == pytest.approx(5.0)
    assert math.isinf(issue_bound(100, 0, 10, 0))
    assert math.isinf(issue_bound(100, 40, 10, 10))


def test_in_place_shared_tree_is_recognised_and_a_transpose_is_not(build_cubin):
    ctx = _ctx(build_cubin, TREE, "tree")
    tree = shared_tree(ctx, ctx.entry)
    ops = {ctx.site(o).instruction.base_opcode for o in tree}
    assert ops == {"LDS", "STS"}
    # every in-place step's load and store is in the tree; the rest of the kernel is not
    assert all(ctx.site(o).instruction.loc.line in (5, 8, 11) for o in tree)
    assert any(ctx.site(o).instruction.loc.line == 8 for o in tree)
    ctx = _ctx(build_cubin, TRANSPOSE, "transpose")
    assert shared_tree(ctx, ctx.entry) == frozenset()


def test_loop_with_a_barrier_is_told_apart(build_cubin):
    ctx = _ctx(build_cubin, LOOPS, "with_bar")
    loops = ctx.loops[ctx.entry.name]
    assert loops and all(has_barrier(ctx, lp) for lp in loops)
    ctx = _ctx(build_cubin, LOOPS, "without_bar")
    loops = ctx.loops[ctx.entry.name]
    assert loops and not any(has_barrier(ctx, lp) for lp in loops)


def test_local_array_loop_control_is_the_branches_and_their_compares(build_cubin):
    ctx = _ctx(build_cubin, LOCAL, "arr")
    control = _control(ctx)
    ops = {ctx.site(o).instruction.base_opcode for o in control}
    assert "BRA" in ops and "ISETP" in ops
    assert ops <= {"BRA", "ISETP", "PLOP3", "FSETP"}
    # the loops holding local accesses (row[] filled on line 5, read on lines 7-8), nothing else
    assert {ctx.site(o).instruction.loc.line for o in control} == {5, 7, 8}


def test_deleted_local_accesses_take_their_address_arithmetic_not_their_data(build_cubin):
    """analysis/deletion.py: with row[]'s LDL/STL deleted, the instructions that only computed their
    addresses are dead; the loads whose values were stored (in[...], line 5) and the arithmetic on
    the values (line 8) stay, since a stored value moves to a register."""
    ctx = _ctx(build_cubin, LOCAL, "arr")
    ins = ctx.entry.instructions
    local = frozenset(i.offset for i in ins if i.memory is not None and i.memory.space == "local")
    assert local
    dead = dead_code(ctx, local)
    assert dead and not dead & local
    ops = {ctx.site(o).instruction.base_opcode for o in dead}
    assert ops <= {"IMAD", "LEA", "IADD3", "MOV", "SHF", "LOP3", "VIADD", "IADD", "UIADD3", "IMAD.SHL"}, ops
    for o in dead:
        i = ctx.site(o).instruction
        assert i.memory is None and not i.base_opcode.startswith(("FFMA", "FMUL", "FADD")), i.text
    # every dead instruction's results feed only deleted or dead instructions' addresses
    kept_values = {i.offset for i in ins if i.base_opcode in ("LDG", "FFMA", "FMUL", "FADD")}
    assert not dead & kept_values
    # and nothing is dead when nothing is deleted
    assert dead_code(ctx, frozenset()) == frozenset()
