"""The analysis-side view of one function's control flow: index-based blocks and loops.

Blocks, edges, dominators and loops have one definition, in
:mod:`gpa_lsp.sass.cfg`; this module only re-indexes them for the blamer,
whose data-flow pass works on instruction *indices* (ranges of
``function.instructions``) and block indices in reverse post-order, and for
the optimizers, which ask "which loop holds instruction i".

A Function loaded from a cubin carries its CFG and loop nest (filled by
``sass.program``); a synthetic one (property tests) does not, so
:func:`with_cfg` derives them with the same ``cfg`` functions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpa_lsp.sass import cfg
from gpa_lsp.sass.model import Function


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


def with_cfg(function: Function) -> Function:
    """``function`` with blocks, edges and loops: its own when present, else from ``sass.cfg``."""
    if function.blocks or not function.instructions:
        return function
    ins = function.instructions
    # the virtual exit node must not coincide with a block (a synthetic Function may have size 0)
    end = max(function.start + function.size, ins[-1].offset + 16)
    blocks, edges = cfg.blocks_and_edges(ins, function.start, end)
    fn = dataclasses.replace(function, blocks=blocks, edges=edges)
    return dataclasses.replace(fn, loops=cfg.loop_nest(fn))


def forward_blocks(function: Function) -> tuple[dict[int, int], list, dict[int, list[int]]]:
    """What a forward data-flow pass over ``function``'s blocks needs: instruction index by offset,
    the non-empty blocks in order, and each block's predecessors (by start offset) over the
    fallthrough and branch edges (``call`` edges lead into the callee, ``return``/``exit`` out of
    the function: neither is a step within it)."""
    pos = {ins.offset: i for i, ins in enumerate(function.instructions)}
    blocks = [b for b in function.blocks if b.instructions]
    preds: dict[int, list[int]] = {b.start: [] for b in blocks}
    for e in function.edges:
        if e.kind in ("fallthrough", "taken", "not_taken") and e.dst in preds:
            preds[e.dst].append(e.src)
    return pos, blocks, preds


def build_flow(function: Function) -> Flow:
    """Blocks of ``function`` (as ``sass.cfg`` defines them) by index, with a reverse post-order.

    The edges are ``cfg.block_graph``'s (intra-function kinds, to a block, each pair once, in
    ``function.edges`` order) and the post-order is networkx's ``dfs_postorder_nodes`` on it,
    both computed here on plain dicts: building the networkx graph cost more than the blamer's
    use of it on kernels with thousands of blocks (tests/analysis/test_flow.py checks they agree).
    """
    fn = with_cfg(function)
    if not fn.blocks:
        return Flow((), (), ())
    succ: dict[int, dict[int, None]] = {b.start: {} for b in fn.blocks}
    pred: dict[int, list[int]] = {b.start: [] for b in fn.blocks}
    for e in fn.edges:
        if e.kind in cfg.INTRA and e.dst in succ:
            out = succ.setdefault(e.src, {})
            if e.dst not in out:
                out[e.dst] = None
                pred[e.dst].append(e.src)
    index_of = {x.offset: i for i, x in enumerate(fn.instructions)}
    number = {b.start: k for k, b in enumerate(fn.blocks)}
    blocks = []
    block_of = [0] * len(fn.instructions)
    for k, b in enumerate(fn.blocks):
        first = index_of[b.instructions[0]]
        last = first + len(b.instructions)
        block_of[first:last] = [k] * (last - first)
        blocks.append(FlowBlock(k, first, last, tuple(number[s] for s in succ[b.start]),
                                tuple(sorted(number[p] for p in pred[b.start]))))
    # reverse post-order from the entry; unreachable blocks appended in address order
    post = [number[s] for s in _postorder(succ, fn.blocks[0].start)]
    seen = set(post)
    rpo = post[::-1] + [k for k in range(len(blocks)) if k not in seen]
    return Flow(tuple(blocks), tuple(block_of), tuple(rpo))


def _postorder(succ: dict[int, dict[int, None]], start: int) -> list[int]:
    """Depth-first post-order from ``start``, children in ``succ`` order (networkx's order)."""
    out = []
    visited = {start}
    stack = [(start, iter(succ.get(start, ())))]
    while stack:
        parent, children = stack[-1]
        for child in children:
            if child not in visited:
                visited.add(child)
                stack.append((child, iter(succ.get(child, ()))))
                break
        else:
            stack.pop()
            out.append(parent)
    return out


@dataclass(frozen=True)
class LoopScope:
    """A loop as instruction-index sets, innermost-first lookup friendly."""

    header_offset: int
    instructions: frozenset[int]     # instruction indices of the body
    depth: int
    parent: int | None               # header offset of the enclosing loop
    file: str | None
    line: int | None


# a remainder loop is one copy of the body; the unrolled body is at least two (less the loop's own
# overhead, which the copies share): nvcc's unroll by 4 of a one-load loop gives 20 and 9
# instructions, by 16 70, 22 and 9 (benchmarks/unroll). Copies of one size are another thing: an
# inner loop repeated by the full unroll of an outer one.
REMAINDER_RATIO = 1.5


def unrolled_by_compiler(scopes: tuple[LoopScope, ...], loop: LoopScope) -> bool:
    """Whether nvcc unrolled this source loop itself: other SASS loops of the function carry its
    source line at its depth under the same parent, and they differ in size (an unrolled body and
    its remainder loop, the signature of a loop with a run-time trip count unrolled at -O3;
    ``benchmarks/unroll``)."""
    if loop.line is None:
        return False
    sizes = [len(s.instructions) for s in scopes
             if s.line == loop.line and s.file == loop.file and s.depth == loop.depth and s.parent == loop.parent]
    return len(sizes) >= 2 and max(sizes) >= REMAINDER_RATIO * min(sizes)


def loop_scopes(function: Function, flow: Flow | None = None) -> tuple[LoopScope, ...]:
    """The loop nest of ``sass.cfg.loop_nest`` as instruction-index sets.

    ``flow`` is accepted for callers that hold one; membership comes from the blocks themselves.
    """
    fn = with_cfg(function)
    if not fn.loops:
        return ()
    index_of = {x.offset: i for i, x in enumerate(fn.instructions)}
    members_of = {b.start: [index_of[o] for o in b.instructions] for b in fn.blocks}
    return tuple(LoopScope(lp.header, frozenset(i for bs in lp.blocks for i in members_of.get(bs, ())),
                           lp.depth, lp.parent, lp.file, lp.line)
                 for lp in fn.loops)


def innermost_loops(scopes: tuple[LoopScope, ...]) -> dict[int, LoopScope]:
    """instruction index -> its innermost loop, for every index in a loop: what ``innermost_loop``
    answers, for all indices in one pass (asking it per instruction costs loops x instructions)."""
    out: dict[int, LoopScope] = {}
    for s in sorted(scopes, key=lambda s: s.depth):       # stable: the first of equal depths wins,
        for i in s.instructions:                          # as in innermost_loop
            best = out.get(i)
            if best is None or s.depth > best.depth:
                out[i] = s
    return out


def innermost_loop(scopes: tuple[LoopScope, ...], index: int) -> LoopScope | None:
    best: LoopScope | None = None
    for s in scopes:
        if index in s.instructions and (best is None or s.depth > best.depth):
            best = s
    return best
