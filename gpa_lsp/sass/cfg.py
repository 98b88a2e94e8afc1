"""Control flow of one function: basic blocks, edges, dominators, natural loops.

Plain functions over data and networkx graphs (no state). Edge kinds:
``fallthrough``, ``taken`` / ``not_taken`` (a conditional branch: guarded, or
with a predicate operand such as ``BRA P1, target``, or ``BRA.DIV``), ``call``
(dst = the callee's entry offset in the same section), ``return`` and
``exit``. Return and exit edges have no block to go to inside the function:
their ``dst`` is the function's end offset (``start + size``), a virtual exit
node that :func:`block_graph` leaves out.

A CALL ends its block (call edge + fallthrough to the return point); an
unguarded EXIT/RET ends a block with no successor; a guarded one ends it too,
with the exit/return edge and a fallthrough. The unreachable ``BRA self``
padding at the end of a section is its own block; loops are only searched in
blocks reachable from the entry, so it is never a loop.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import networkx as nx

from .model import Block, Edge, Function, Instruction, Loop
from .opcodes import BRANCHES, CALLS, EXITS, RETURNS

INTRA = frozenset(("fallthrough", "taken", "not_taken"))


def _is_conditional_branch(ins: Instruction) -> bool:
    if ins.predicate is not None:
        return True
    if ins.opcode.startswith(("BRA.DIV", "BRA.CONV")) or ins.base_opcode in ("BRX", "JMX", "BRXU", "JMXU"):
        return True
    for op in ins.operands:
        t = op.lstrip("!")
        if (t[:1] == "P" and t[1:2].isdigit()) or (t[:2] == "UP" and t[2:3].isdigit()):
            return True
    return False


def blocks_and_edges(instructions: Sequence[Instruction], start: int, end: int,
                     callee_starts: dict[str, int] | None = None,
                     extra_targets: dict[int, tuple[int, ...]] | None = None
                     ) -> tuple[tuple[Block, ...], tuple[Edge, ...]]:
    """Basic blocks of a function occupying ``[start, end)`` and the edges between them.

    ``extra_targets``: offset -> further targets of multi-target branches (BRX with a label list).
    """
    if not instructions:
        return (), ()
    callee_starts = callee_starts or {}
    extra_targets = extra_targets or {}
    inside = {ins.offset for ins in instructions}
    leaders = {instructions[0].offset}
    terminators: set[int] = set()
    for k, ins in enumerate(instructions):
        base = ins.base_opcode
        ends = False
        if base in BRANCHES:
            ends = True
            for t in (ins.branch_target, *extra_targets.get(ins.offset, ())):
                if t is not None and t in inside:
                    leaders.add(t)
        elif base in EXITS or base in RETURNS or base in CALLS:
            ends = True
        if ends:
            terminators.add(ins.offset)
            if k + 1 < len(instructions):
                leaders.add(instructions[k + 1].offset)

    blocks: list[Block] = []
    cur: list[int] = []
    for ins in instructions:
        if ins.offset in leaders and cur:
            blocks.append(Block(cur[0], cur[-1] + 16, tuple(cur)))
            cur = []
        cur.append(ins.offset)
    if cur:
        blocks.append(Block(cur[0], cur[-1] + 16, tuple(cur)))

    by_offset = {ins.offset: ins for ins in instructions}
    edges: list[Edge] = []
    for i, b in enumerate(blocks):
        last = by_offset[b.instructions[-1]]
        nxt = blocks[i + 1].start if i + 1 < len(blocks) else None
        base = last.base_opcode
        if last.offset not in terminators:
            if nxt is not None:
                edges.append(Edge(b.start, nxt, "fallthrough"))
            continue
        if base in BRANCHES:
            tgts = [t for t in (last.branch_target, *extra_targets.get(last.offset, ())) if t is not None]
            for t in dict.fromkeys(tgts):
                if t in inside:
                    edges.append(Edge(b.start, t, "taken"))
            if _is_conditional_branch(last) and nxt is not None:
                edges.append(Edge(b.start, nxt, "not_taken"))
        elif base in CALLS:
            if last.call_target is not None and last.call_target in callee_starts:
                edges.append(Edge(b.start, callee_starts[last.call_target], "call"))
            if nxt is not None:
                edges.append(Edge(b.start, nxt, "fallthrough"))
        else:
            edges.append(Edge(b.start, end, "exit" if base in EXITS else "return"))
            if last.predicate is not None and nxt is not None:
                edges.append(Edge(b.start, nxt, "fallthrough"))
    return tuple(blocks), tuple(edges)


def block_graph(function: Function) -> nx.DiGraph:
    """Blocks as nodes (attribute ``block``), intra-function edges (attribute ``kind``)."""
    return _graph(function.blocks, function.edges)


def _graph(blocks: Iterable[Block], edges: Iterable[Edge]) -> nx.DiGraph:
    g = nx.DiGraph()
    for b in blocks:
        g.add_node(b.start, block=b)
    for e in edges:
        if e.kind in INTRA and e.dst in g and not g.has_edge(e.src, e.dst):
            g.add_edge(e.src, e.dst, kind=e.kind)
    return g


def instruction_successors(function: Function) -> dict[int, tuple[int, ...]]:
    """Offset -> offsets that can execute next inside the function (a call continues after itself)."""
    out: dict[int, tuple[int, ...]] = {}
    succ_of_block: dict[int, list[int]] = {}
    for e in function.edges:
        if e.kind in INTRA:
            succ_of_block.setdefault(e.src, []).append(e.dst)
    for b in function.blocks:
        ins = b.instructions
        for k in range(len(ins) - 1):
            out[ins[k]] = (ins[k + 1],)
        out[ins[-1]] = tuple(dict.fromkeys(succ_of_block.get(b.start, ())))
    return out


def dominator_tree(graph: nx.DiGraph, entry: int) -> dict[int, int]:
    """Immediate dominator of every block reachable from ``entry`` (the entry maps to itself).

    networkx 3.5 and later leave the entry out of ``immediate_dominators``; without it a loop whose
    header is the function's first block was not found (its back edge looked unreachable)."""
    if entry not in graph:
        return {}
    idom = dict(nx.immediate_dominators(graph, entry))
    idom[entry] = entry
    return idom


def _dominance(idom: dict[int, int], entry: int) -> dict[int, tuple[int, int]]:
    """Block -> (preorder, postorder) number in the dominator tree: ``a`` dominates ``b`` exactly when
    ``a``'s interval holds ``b``'s. Why not walk ``b``'s dominators up to ``a``: a kernel of N loops
    in sequence has a dominator chain N deep, so a walk per edge was quadratic."""
    children: dict[int, list[int]] = {}
    for b, p in idom.items():
        if p != b and b != entry:
            children.setdefault(p, []).append(b)
    root = entry
    out: dict[int, tuple[int, int]] = {}
    pre: dict[int, int] = {}
    clock = 0
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out[node] = (pre[node], clock)
            clock += 1
            continue
        pre[node] = clock
        clock += 1
        stack.append((node, True))
        stack.extend((c, False) for c in children.get(node, ()))
    return out


def _dominates(number: dict[int, tuple[int, int]], a: int, b: int) -> bool:
    pa, qa = number[a]
    pb, qb = number[b]
    return pa <= pb and qb <= qa


def natural_loops(graph: nx.DiGraph, entry: int) -> list[tuple[int, frozenset[int], tuple[int, ...]]]:
    """(header, body blocks, back-edge sources) per natural loop; back edges to one header are merged."""
    idom = dominator_tree(graph, entry)
    number = _dominance(idom, entry)
    bodies: dict[int, set[int]] = {}
    latches: dict[int, list[int]] = {}
    for u, h in graph.edges():
        if u in idom and h in idom and _dominates(number, h, u):
            body = bodies.setdefault(h, {h})
            latches.setdefault(h, []).append(u)
            stack = [u]
            while stack:
                n = stack.pop()
                if n in body:
                    continue
                body.add(n)
                stack.extend(p for p in graph.predecessors(n) if p in idom)
    return [(h, frozenset(b), tuple(sorted(latches[h]))) for h, b in sorted(bodies.items())]


def loop_nest(function: Function, graph: nx.DiGraph | None = None) -> tuple[Loop, ...]:
    """Natural loops with nesting (depth 1 = outermost), parent header and source lines."""
    if not function.blocks:
        return ()
    g = graph if graph is not None else block_graph(function)
    raw = natural_loops(g, function.blocks[0].start)
    # parent: the smallest other loop whose body contains this header (the first such, in ``raw``
    # order, among equals); only loops whose body holds the header are candidates (comparing every
    # pair of loops was quadratic in a kernel of thousands of loops)
    headers = {h for h, _, _ in raw}
    around: dict[int, list[tuple[int, frozenset[int]]]] = {}
    for h2, body2, _ in raw:
        for b in body2 & headers:          # a set operation walks the smaller of the two
            around.setdefault(b, []).append((h2, body2))
    parents: dict[int, int | None] = {}
    for h, body, _ in raw:
        best = None
        for h2, body2 in around.get(h, ()):
            if h2 != h and body <= body2 and (best is None or len(body2) < len(best[1])):
                best = (h2, body2)
        parents[h] = best[0] if best else None

    def depth(h: int) -> int:
        d = 1
        p = parents[h]
        while p is not None:
            d += 1
            p = parents[p]
        return d

    blocks = {b.start: b for b in function.blocks}
    by_offset = {ins.offset: ins for ins in function.instructions}
    loops = []
    for h, body, latch in raw:
        file, line, level = _loop_line(blocks, by_offset, h, latch)
        rng = _line_range(blocks, by_offset, body, file, level)
        loops.append(Loop(header=h, blocks=body, depth=depth(h), parent=parents[h], file=file, line=line,
                          line_range=rng))
    return tuple(sorted(loops, key=lambda lp: (lp.depth, lp.header)))


def _frames(ins: Instruction):
    if ins.loc is None:
        return ()
    return (ins.loc, *ins.inline)


def _loop_line(blocks, by_offset, header: int, latches: tuple[int, ...]):
    """Source line of a loop: its latest back-edge branch (nvcc puts the loop test there), else the header.

    Returns (file, line, inline level), the level being the length of that
    instruction's inline chain, so body lines are read at the same level.
    """
    for src in sorted(latches, reverse=True):
        ins = by_offset[blocks[src].instructions[-1]]
        if ins.loc is not None:
            return ins.loc.file, ins.loc.line, len(ins.inline)
    for off in blocks[header].instructions:
        ins = by_offset[off]
        if ins.loc is not None:
            return ins.loc.file, ins.loc.line, len(ins.inline)
    return None, None, 0


def _line_range(blocks, by_offset, body, file, level):
    if file is None:
        return None
    lo = hi = None
    for b in body:
        for off in blocks[b].instructions:
            fr = _frames(by_offset[off])
            if len(fr) <= level:
                continue
            f = fr[len(fr) - 1 - level]
            if f.file != file or f.line <= 0:
                continue
            lo = f.line if lo is None or f.line < lo else lo
            hi = f.line if hi is None or f.line > hi else hi
    return (lo, hi) if lo is not None else None
