"""Intra-function control flow as the blamer needs it: basic blocks and loops.

The blamer walks def-use chains inside one function, so it needs blocks and
successor lists derived from the instructions alone (``branch_target`` and the
opcode). Deriving them here, rather than from ``Function.blocks``/``edges``,
keeps the analysis usable on any Function (a synthetic one in a property
test, or one whose CFG the static side did not fill). Loops come from
``Function.loops`` when present and are rebuilt from back edges otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from gpa_lsp.sass.model import Function, Instruction, Loop

# Opcodes that end a block. BSSY/BSYNC/WARPSYNC carry a target but do not branch.
_BRANCHES = {"BRA", "JMP", "BRX", "JMX"}
_ENDS = {"EXIT", "RET", "KILL", "BPT"}
SYNC_OPCODES = {"BAR", "BARRIER", "MEMBAR", "SYNCS", "WARPSYNC", "BSYNC", "ERRBAR", "DEPBAR", "ARRIVES", "CCTL"}


@dataclass(frozen=True)
class FlowBlock:
    index: int
    first: int            # index of the first instruction in the function's tuple
    last: int             # index one past the last
    succs: tuple[int, ...]
    preds: tuple[int, ...]


@dataclass(frozen=True)
class Flow:
    blocks: tuple[FlowBlock, ...]
    block_of: tuple[int, ...]          # instruction index -> block index
    rpo: tuple[int, ...]               # block indices in reverse post-order


def _falls_through(ins: Instruction) -> bool:
    base = ins.base_opcode
    if base in _ENDS or base in ("BRA", "JMP", "BRX", "JMX"):
        return ins.predicate is not None
    return True


def build_flow(function: Function) -> Flow:
    """Basic blocks of ``function`` with successors and a reverse post-order."""
    ins = function.instructions
    n = len(ins)
    if n == 0:
        return Flow((), (), ())
    index_of = {x.offset: i for i, x in enumerate(ins)}
    leaders = {0}
    for i, x in enumerate(ins):
        base = x.base_opcode
        if base in _BRANCHES or base in _ENDS:
            if i + 1 < n:
                leaders.add(i + 1)
            if base in _BRANCHES and x.branch_target in index_of:
                leaders.add(index_of[x.branch_target])
    starts = sorted(leaders)
    block_of = [0] * n
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else n
        for i in range(s, e):
            block_of[i] = b
    succs: list[list[int]] = [[] for _ in starts]
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else n
        last = ins[e - 1]
        out: list[int] = []
        if last.base_opcode in _BRANCHES and last.branch_target in index_of:
            out.append(block_of[index_of[last.branch_target]])
        if _falls_through(last) and e < n:
            out.append(b + 1)
        succs[b] = list(dict.fromkeys(out))
    preds: list[list[int]] = [[] for _ in starts]
    for b, ss in enumerate(succs):
        for t in ss:
            preds[t].append(b)
    blocks = tuple(FlowBlock(b, s, starts[b + 1] if b + 1 < len(starts) else n, tuple(succs[b]), tuple(preds[b]))
                   for b, s in enumerate(starts))
    # reverse post-order from the entry; unreachable blocks appended in address order
    seen: set[int] = set()
    post: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    seen.add(0)
    while stack:
        b, k = stack.pop()
        if k < len(succs[b]):
            stack.append((b, k + 1))
            t = succs[b][k]
            if t not in seen:
                seen.add(t)
                stack.append((t, 0))
        else:
            post.append(b)
    rpo = post[::-1] + [b for b in range(len(starts)) if b not in seen]
    return Flow(blocks, tuple(block_of), tuple(rpo))


def block_graph(flow: Flow) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(flow.blocks)))
    for blk in flow.blocks:
        for t in blk.succs:
            g.add_edge(blk.index, t)
    return g


@dataclass(frozen=True)
class LoopScope:
    """A loop as instruction-index sets, innermost-first lookup friendly."""

    header_offset: int
    instructions: frozenset[int]     # instruction indices of the body
    depth: int
    parent: int | None               # header offset of the enclosing loop
    file: str | None
    line: int | None


def loop_scopes(function: Function, flow: Flow) -> tuple[LoopScope, ...]:
    """Loops of the function as instruction-index sets (from Function.loops, else back edges)."""
    ins = function.instructions
    if not ins:
        return ()
    index_of = {x.offset: i for i, x in enumerate(ins)}
    scopes: list[LoopScope] = []
    if function.loops and function.blocks:
        block_range = {b.start: (b.start, b.end) for b in function.blocks}
        for lp in function.loops:
            members: set[int] = set()
            for bs in lp.blocks:
                s, e = block_range.get(bs, (bs, bs))
                for off in range(s, e, 16):
                    if off in index_of:
                        members.add(index_of[off])
            scopes.append(LoopScope(lp.header, frozenset(members), lp.depth, lp.parent, lp.file, lp.line))
        return tuple(scopes)
    return _natural_loops(function, flow)


def _natural_loops(function: Function, flow: Flow) -> tuple[LoopScope, ...]:
    if not flow.blocks:
        return ()
    g = block_graph(flow)
    reachable = nx.descendants(g, 0) | {0}
    idom = nx.immediate_dominators(g.subgraph(reachable), 0)

    def dominates(a: int, b: int) -> bool:
        while True:
            if a == b:
                return True
            nb = idom.get(b)
            if nb is None or nb == b:
                return False
            b = nb

    bodies: dict[int, set[int]] = {}
    for u, h in g.edges():
        if u in reachable and dominates(h, u):
            body = bodies.setdefault(h, {h})
            work = [u]
            while work:
                x = work.pop()
                if x not in body:
                    body.add(x)
                    work.extend(flow.blocks[x].preds)
    ins = function.instructions
    headers = sorted(bodies, key=lambda h: len(bodies[h]), reverse=True)
    out: list[LoopScope] = []
    parents: dict[int, int | None] = {}
    depth: dict[int, int] = {}
    for h in headers:
        enclosing = [o for o in headers if o != h and h in bodies[o] and len(bodies[o]) >= len(bodies[h])]
        par = min(enclosing, key=lambda o: len(bodies[o])) if enclosing else None
        parents[h] = par
        depth[h] = 1 if par is None else depth[par] + 1
        members = frozenset(i for b in bodies[h] for i in range(flow.blocks[b].first, flow.blocks[b].last))
        first = ins[flow.blocks[h].first]
        lines = [ins[i].loc.line for i in members if ins[i].loc is not None]
        loc_file = first.loc.file if first.loc else None
        line = first.loc.line if first.loc else (min(lines) if lines else None)
        out.append(LoopScope(first.offset, members, depth[h],
                             ins[flow.blocks[par].first].offset if par is not None else None, loc_file, line))
    return tuple(out)


def innermost_loop(scopes: tuple[LoopScope, ...], index: int) -> LoopScope | None:
    best: LoopScope | None = None
    for s in scopes:
        if index in s.instructions and (best is None or s.depth > best.depth):
            best = s
    return best
