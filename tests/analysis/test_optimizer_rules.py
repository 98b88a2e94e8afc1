"""The SASS and source patterns behind the calibrated optimizer rules, on real nvcc output.

Each kernel here is compiled with nvcc; the tests check what the rules recognise
in its SASS (spills, reloads, division expansions, math calls, source loops).
The one hand-written number is in the N-way conflict arithmetic test.
"""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.optimizers.fast_math import math_calls
from gpa_lsp.analysis.optimizers.shared_memory_bank_conflicts import conflict_share
from gpa_lsp.analysis.optimizers.strength_reduction import is_division_core
from gpa_lsp.analysis.sources import loops_around, source_loops
from gpa_lsp.profile.model import PCStats
from gpa_lsp.sass import load_program
from gpa_lsp.sass.patterns import is_local, is_spill, reloads

SPILLS = r"""
__global__ void __launch_bounds__(256, 8) spill(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = 0.f;
  for (int s = 0; s < 16; ++s) {
    float v = x[s * n + i];
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = acc[k] * v + (k + 1);
  }
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < 48; ++k) sum += acc[k];
  out[i] = sum;
}
"""

LOCAL_ARRAY = r"""
__global__ void arr(const float* in, float* out, int n, int sel) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float row[16];
  for (int j = 0; j < 16; ++j) row[j] = in[(i + j) & (n - 1)];
  float acc = 0.f;
  for (int j = 0; j < 64; ++j) acc += row[(j * sel + i) & 15];
  out[i] = acc;
}
"""

FIR = r"""
__global__ void fir(float* out, QUAL float* in, QUAL float* coef, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
#pragma unroll
  for (int o = 0; o < 4; ++o) {
    float s = 0.f;
#pragma unroll
    for (int t = 0; t < 8; ++t) s += in[base + o + t] * coef[t];
    out[base + o] = s;
  }
}
"""

DIVIDE = r"""
__global__ void div(const int* a, int* out, int d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = a[i] / DIVISOR;
}
"""


def _fn(build_cubin, src, name):
    program = load_program(build_cubin(src))
    return next(f for f in program.functions if f.entry and name in f.name)


def test_spills_are_recognised_and_array_accesses_are_not(build_cubin):
    f = _fn(build_cubin, SPILLS, "spill")
    local = [i for i in f.instructions if is_local(i)]
    spills = [i for i in local if is_spill(i, f)]
    assert spills and len(spills) == len(local)
    assert {i.base_opcode for i in spills} == {"LDL", "STL"}
    g = _fn(build_cubin, LOCAL_ARRAY, "arr")
    glocal = [i for i in g.instructions if is_local(i)]
    assert glocal, "the dynamically indexed array must live in local memory"
    assert not any(is_spill(i, g) for i in glocal)


def test_reloads_after_stores_only_without_restrict(build_cubin):
    plain = _fn(build_cubin, FIR.replace("QUAL ", ""), "fir")
    got = reloads(plain)
    loads = [i for i in plain.instructions if i.base_opcode == "LDG"]
    # 4 outputs x (8 in + 8 coef) loads; only 11 in + 8 coef distinct addresses
    assert len(loads) == 64 and len(got) == 64 - 19
    assert all(plain.instructions[[i.offset for i in plain.instructions].index(o)].base_opcode == "LDG" for o in got)
    restricted = _fn(build_cubin, FIR.replace("QUAL", "const").replace("float* in", "float* __restrict__ in")
                     .replace("float* coef", "float* __restrict__ coef").replace("float* out", "float* __restrict__ out"),
                     "fir")
    assert reloads(restricted) == set()


@pytest.mark.parametrize("divisor,cores", [("d", 1), ("8", 0), ("7", 0)])
def test_integer_division_expansion_marker(build_cubin, divisor, cores):
    f = _fn(build_cubin, DIVIDE.replace("DIVISOR", divisor), "div")
    assert sum(is_division_core(i) for i in f.instructions) == cores


def test_math_calls_on_a_line():
    assert math_calls("acc += powf(x, 2.7f) * expf(-0.05f * v) * sinf(w * t);") == ["powf", "expf", "sinf"]
    assert math_calls("acc += __powf(x, 2.7f) * __expf(v) * __sinf(t);") == []
    assert math_calls("y = std::sqrtf(x); // cosf(x) in a comment") == ["sqrtf"]
    assert math_calls("z = sin(x) + my.expf(3);") == []


def test_conflict_share_arithmetic():
    """Unit test of arithmetic: the N-way counter gives (N-1)/N replayed wavefronts."""
    def pc(n):
        return PCStats("c", "k", 0, (), (), executed=1024, bank_conflicts=n)
    assert conflict_share(pc(32)) == pytest.approx(31 / 32)
    assert conflict_share(pc(1)) == 0.0
    assert conflict_share(pc(None)) == 0.0


def test_source_loops_and_pragmas():
    lines = SPILLS.splitlines()
    loops = source_loops(lines)
    heads = [(lp.line, lp.pragma) for lp in loops]
    assert heads == [(6, "#pragma unroll"), (7, None), (10, "#pragma unroll"), (14, "#pragma unroll")]
    assert [lp.line for lp in loops_around(lines, 10)] == [7, 10]
    assert loops[1].first == 7 and loops[1].last == 11
    assert loops_around(lines, 16) == []
