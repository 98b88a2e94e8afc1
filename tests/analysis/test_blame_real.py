"""The blamer on real SASS built with nvcc. Sample counts here are inputs to an
attribution unit test (where does a stall of N samples go), not measurements."""

from __future__ import annotations

import pytest

from gpa_lsp.sass import defuse
from gpa_lsp.analysis.blame import blame_function, hot_dependences, reaching_defs
from gpa_lsp.profile.model import PCStats
from gpa_lsp.sass import load_program

CALL_AFTER_LOAD = r"""
__device__ __noinline__ float g(float x) { return x * x + 1.0f; }
__global__ void b4(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  out[i] = g(v);
}
"""

SELECT = r"""
__global__ void c2(const int* a, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i];
  int v = (x & 1) ? x * 7 + 3 : x / 5;
  out[i] = v + 1;
}
"""

FAR_USE = r"""
__global__ void c1(const float* a, const float* b, float* out, int n, int sel) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = a[i], y = b[i];
  float v;
  if (x > y) v = __fdividef(x, y) + 1.0f; else v = __expf(y) * x;
  out[i] = v * 3.0f;
}
"""


def _stats(fn, offset, stalls, not_issued=()):
    return PCStats("sha", fn.name, offset, tuple(sorted(stalls)), tuple(sorted(not_issued)))


def _kernel(build_cubin, src, name):
    prog = load_program(build_cubin(src, name=name))
    return next(f for f in prog.functions if f.entry)


def test_branch_stall_blamed_through_barrier_alone_to_the_load(build_cubin):
    fn = _kernel(build_cubin, CALL_AFTER_LOAD, "callwait")
    call = next(i for i in fn.instructions if i.base_opcode == "CALL")
    ldg = next(i for i in fn.instructions if i.base_opcode == "LDG")
    # the call reads no register of the load: only the scoreboard links them
    assert not (call.srcs & ldg.dsts)
    assert f"B{ldg.control.write_barrier}" in defuse.barrier_uses(call)
    fb = blame_function(fn, {call.offset: _stats(fn, call.offset, [("long_scoreboard", 40)],
                                                 [("long_scoreboard", 30)])})
    edges = [e for e in fb.edges if e.use == call.offset]
    assert [(e.def_, e.category) for e in edges] == [(ldg.offset, "global_memory")]
    assert edges[0].stall == pytest.approx(40) and edges[0].latency == pytest.approx(30)


def test_predicated_definitions_on_both_sides_are_both_blamed(build_cubin):
    fn = _kernel(build_cubin, SELECT, "select")
    ins = fn.instructions
    # a register written under @P and under @!P, then read unguarded
    use = None
    for k, u in enumerate(ins):
        if u.predicate is not None or u.base_opcode in ("STG", "EXIT", "BRA"):
            continue
        for r in u.srcs:
            guards = {(d.predicate, d.predicate_negated) for d in ins[:k] if r in d.dsts and d.predicate}
            if len({g[0] for g in guards}) == 1 and len(guards) == 2:
                use, reg = u, r
                break
        if use:
            break
    assert use is not None, "nvcc no longer emits a predicated select here"
    defs = [d.offset for d in ins if reg in d.dsts and d.predicate and d.offset < use.offset]
    reach = reaching_defs(fn)[ins.index(use)]
    reached = {ins[d.def_].offset for d in reach if reg in d.resources}
    assert set(defs[-2:]) <= reached
    fb = blame_function(fn, {use.offset: _stats(fn, use.offset, [("wait", 10)], [("wait", 10)])})
    blamed = {e.def_: e.stall for e in fb.edges if e.use == use.offset and e.category != "self"}
    assert set(defs[-2:]) <= set(blamed)
    assert sum(e.stall for e in fb.edges) == pytest.approx(10)
    # Eq. 1: the nearer definition gets the larger share (both were never seen issuing: equal I_i)
    near, far = sorted(defs[-2:], key=lambda o: use.offset - o)
    assert blamed[near] > blamed[far]


def test_far_fixed_latency_definition_is_pruned(build_cubin):
    fn = _kernel(build_cubin, FAR_USE, "faruse")
    ins = fn.instructions
    reach = reaching_defs(fn)
    found = 0
    for k, deps in reach.items():
        hot = {d.def_ for d in hot_dependences(fn, k, deps)}
        for d in deps:
            definer = ins[d.def_]
            lo, hi, fixed = defuse.latency(definer)
            if definer.control.write_barrier is None and fixed and d.distance >= lo \
                    and not any(r.startswith("B") for r in d.resources):
                assert d.def_ not in hot, (definer.text, ins[k].text, d.distance)
                found += 1
            if definer.control.write_barrier is None and fixed and d.distance < lo and d.def_ != k:
                assert d.def_ in hot
    assert found >= 1
    # and a stall at such a far use is never blamed on that def
    k, d = next((k, d) for k, deps in reach.items() for d in deps
                if ins[d.def_].control.write_barrier is None and defuse.latency(ins[d.def_])[2]
                and d.distance >= defuse.latency(ins[d.def_])[0])
    fb = blame_function(fn, {ins[k].offset: _stats(fn, ins[k].offset, [("wait", 7)])})
    assert ins[d.def_].offset not in {e.def_ for e in fb.edges}
    assert sum(e.stall for e in fb.edges) == pytest.approx(7)


def test_sync_stall_after_barrier_goes_to_the_barrier(build_cubin):
    src = r"""
__global__ void s(const float* in, float* out) {
  __shared__ float t[256];
  t[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = t[255 - threadIdx.x];
}
"""
    fn = _kernel(build_cubin, src, "sync")
    ins = fn.instructions
    k = next(k for k, i in enumerate(ins) if i.base_opcode == "BAR")
    after = ins[k + 1]
    fb = blame_function(fn, {after.offset: _stats(fn, after.offset, [("barrier", 12)], [("barrier", 12)])})
    assert [(e.def_, e.category, e.stall) for e in fb.edges] == [(ins[k].offset, "synchronization", 12.0)]
