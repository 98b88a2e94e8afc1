"""Blocks, edges, loops, inline chains and non-inlined callees on real nvcc output."""

from __future__ import annotations

from gpa_lsp.sass import block_graph, dominator_tree, instruction_successors

from .kernels import NESTED, line_of


def _kernel(program):
    return program.function("_Z6nestedPKfPfii")


def test_nested_loops_at_their_source_lines(nested_program):
    k = _kernel(nested_program)
    by_line = {lp.line: lp for lp in k.loops}
    outer, inner = line_of(NESTED, "outer"), line_of(NESTED, "inner")
    assert outer in by_line and inner in by_line, [(lp.line, lp.depth) for lp in k.loops]
    lo, li = by_line[outer], by_line[inner]
    assert lo.depth == 1 and lo.parent is None
    assert li.depth == 2 and li.parent == lo.header
    assert li.blocks < lo.blocks
    assert lo.line_range[0] <= outer and lo.line_range[1] >= line_of(NESTED, "inner_body")
    # the partially unrolled body (#pragma unroll 2): two loads of a[] inside the inner loop
    body_loads = [i for b in li.blocks for i in next(x for x in k.blocks if x.start == b).instructions
                  if (ins := k.instruction_at(i)).memory and ins.memory.space == "global" and ins.memory.load]
    assert len(body_loads) == 2
    # every loop header dominates its body
    idom = dominator_tree(block_graph(k), k.start)
    for lp in k.loops:
        for b in lp.blocks:
            n = b
            while n != lp.header:
                assert idom[n] != n, "reached the entry without meeting the header"
                n = idom[n]


def test_forceinline_called_twice_gives_two_inline_chains(nested_program):
    k = _kernel(nested_program)
    body = line_of(NESTED, "sq_body")
    chains = {i.inline[0].line for i in k.instructions if i.loc and i.loc.line == body and i.inline}
    assert chains == {line_of(NESTED, "call1"), line_of(NESTED, "call2")}
    for i in k.instructions:
        if i.loc and i.loc.line == body:
            assert len(i.inline) == 1 and i.inline[0].file.endswith("nested.cu")


def test_noinline_callee_is_its_own_function_with_call_edges(nested_program):
    k = _kernel(nested_program)
    callee = next(f for f in nested_program.functions if "calleefi" in f.name and not f.entry)
    assert callee.section == k.section and callee.start > 0 and callee.start % 16 == 0
    assert callee.instructions[0].offset == callee.start
    assert k.start + k.size == callee.start          # the kernel ends where the callee begins
    assert callee.name in k.callees
    call = next(i for i in k.instructions if i.base_opcode == "CALL")
    assert call.call_target == callee.name
    assert any(e.kind == "call" and e.dst == callee.start for e in k.edges)
    assert any(e.kind == "return" for e in callee.edges)
    loop_line = line_of(NESTED, "callee_loop")
    assert callee.loops and all(lp.line == loop_line for lp in callee.loops)
    # a sample at a callee PC locates the callee, with section offsets
    f, ins = nested_program.locate(k.section, callee.start + 16)
    assert f is callee and ins.offset == callee.start + 16


def test_edges_and_successors(nested_program):
    k = _kernel(nested_program)
    kinds = {e.kind for e in k.edges}
    assert {"taken", "not_taken", "fallthrough", "exit", "call"} <= kinds
    succ = instruction_successors(k)
    assert set(succ) == {i.offset for i in k.instructions}
    for i in k.instructions:
        if i.base_opcode == "BRA" and i.predicate is not None and i.branch_target is not None:
            assert set(succ[i.offset]) == {i.branch_target, i.offset + 16}
        if i.base_opcode == "EXIT" and i.predicate is None:
            assert succ[i.offset] == ()
        if i.base_opcode == "CALL":
            assert succ[i.offset] == (i.offset + 16,)
    starts = {b.start for b in k.blocks}
    for e in k.edges:
        assert e.src in starts
        if e.kind in ("fallthrough", "taken", "not_taken"):
            assert e.dst in starts


def test_a_loop_headed_by_the_entry_block_is_found():
    # networkx >= 3.5 leaves the entry out of immediate_dominators: dominator_tree puts it back
    import networkx as nx

    from gpa_lsp.sass import natural_loops
    g = nx.DiGraph([(0, 16), (16, 0), (16, 32)])        # the entry block is the loop's header
    assert dominator_tree(g, 0)[0] == 0
    assert natural_loops(g, 0) == [(0, frozenset({0, 16}), (16,))]
    g = nx.DiGraph([(0, 16), (16, 32), (32, 16), (32, 48)])
    assert natural_loops(g, 0) == [(16, frozenset({16, 32}), (32,))]
