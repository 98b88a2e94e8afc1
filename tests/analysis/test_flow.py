"""The analysis view of control flow is sass.cfg's blocks, edges and loops, re-indexed."""

from __future__ import annotations

import dataclasses

import networkx as nx

from gpa_lsp.analysis.flow import build_flow, innermost_loop, loop_scopes
from gpa_lsp.sass import block_graph
from gpa_lsp.sass.model import Function, Instruction

NESTED = r"""
__global__ void nest(const float* a, float* out, int n, int m) {
    float acc = 0.f;
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < m; ++j) {
            acc += a[i * m + j] * acc;
        }
        acc *= 0.5f;
    }
    out[threadIdx.x] = acc;
}
"""


def _stripped(fn: Function) -> Function:
    """The same instructions with no CFG, as a synthetic Function arrives."""
    return dataclasses.replace(fn, blocks=(), edges=(), loops=())


def test_flow_blocks_are_the_cfg_blocks(probe_program):
    for fn in probe_program.functions:
        flow = build_flow(fn)
        index_of = {x.offset: i for i, x in enumerate(fn.instructions)}
        assert [(index_of[b.instructions[0]], index_of[b.instructions[-1]] + 1) for b in fn.blocks] == \
               [(fb.first, fb.last) for fb in flow.blocks]
        g = block_graph(fn)
        start = [b.start for b in fn.blocks]
        for fb in flow.blocks:
            assert [start[t] for t in fb.succs] == list(g.successors(start[fb.index]))
            assert sorted(start[p] for p in fb.preds) == sorted(g.predecessors(start[fb.index]))
            assert all(flow.block_of[i] == fb.index for i in range(fb.first, fb.last))
        assert flow.rpo[0] == 0 and sorted(flow.rpo) == list(range(len(flow.blocks)))
        # the reverse post-order is networkx's DFS on sass.cfg's graph (build_flow walks plain dicts)
        post = [start.index(s) for s in nx.dfs_postorder_nodes(g, start[0])]
        assert list(flow.rpo[:len(post)]) == post[::-1]
        # a Function without a CFG gets the very same one from sass.cfg
        assert build_flow(_stripped(fn)) == flow


def test_loop_scopes_are_the_cfg_loops_by_block_membership(build_cubin):
    from gpa_lsp.sass import load_program
    fn = load_program(build_cubin(NESTED, name="nest")).function("_Z4nestPKfPfii")
    scopes = loop_scopes(fn)
    assert len(scopes) == len(fn.loops) >= 2
    index_of = {x.offset: i for i, x in enumerate(fn.instructions)}
    blocks = {b.start: b for b in fn.blocks}
    for s, lp in zip(scopes, fn.loops):
        assert (s.header_offset, s.depth, s.parent, s.file, s.line) == \
               (lp.header, lp.depth, lp.parent, lp.file, lp.line)
        assert s.instructions == {index_of[o] for b in lp.blocks for o in blocks[b].instructions}
    inner = max(scopes, key=lambda s: s.depth)
    assert inner.depth == 2 and inner.parent is not None
    outer = next(s for s in scopes if s.header_offset == inner.parent)
    assert inner.instructions < outer.instructions
    i = min(inner.instructions)
    assert innermost_loop(scopes, i) == inner
    # the same loops when the Function arrives without a CFG
    assert loop_scopes(_stripped(fn)) == scopes


def test_brxu_ends_a_block_as_in_sass_cfg():
    """BRXU/JMXU are branches on the SASS side; the blamer must split blocks the same way."""
    ins = (Instruction(0, "IADD3", (), dsts=frozenset({"R1"})),
           Instruction(16, "BRXU", ("UR4",), srcs=frozenset({"UR4"})),
           Instruction(32, "IADD3", (), srcs=frozenset({"R1"})),
           Instruction(48, "EXIT", ()))
    flow = build_flow(Function("f", ".text.f", True, 0, 64, instructions=ins))
    assert [(b.first, b.last) for b in flow.blocks] == [(0, 2), (2, 4)]
    assert flow.blocks[0].succs == (1,) and flow.blocks[1].succs == ()
    assert flow.block_of == (0, 0, 1, 1)
