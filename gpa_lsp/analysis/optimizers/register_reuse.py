"""Register Reuse: the cost of register spills (``STL``/``LDL`` to the stack frame).

What a spill costs, and why all of it is matched:

* the refill ``LDL`` is a long-latency load: memory-dependency stalls of its
  users are blamed on it (``local_memory``);
* the spill ``STL`` reads a register that the next refill overwrites: the
  write-after-read stall (read scoreboard) is blamed on the ``STL``;
* the spill instructions themselves take issue slots and, above all, entries
  of the LSU's local/global (LG) queue: their own ``lg_throttle`` samples
  (memory throttle), issue and not-selected samples are self samples on them;
* the other loads and stores wait behind them in that queue: their
  ``lg_throttle`` x the spills' share of the queue's entries (lg_queue.py).

Removing the spills (more registers, shorter live ranges) deletes those
instructions, so every sample on them and every stall they cause vanishes:
stall elimination (Eq. 2) over all of it. GPA's original matched only the
``LDL`` blame; on Hopper a spill-bound kernel spends most of its samples in
``lg_throttle`` on the spill instructions themselves, which that misses.

Which local accesses are spills: nvdisasm (CUDA 12+) annotates them with
``(*"SpillRefill"*)``. When a function has no annotation at all (older tools),
a load from the stack frame at a constant offset (``LDL [R1+0x10]``) is taken
as a refill, and a store as a spill only when such a refill reads its slot: a
local array filled at constant offsets and read with a computed index
(``STL [R1]`` ... ``LDL [R5]``) is Local Array's, not a spill.
"""

from __future__ import annotations

import re

from ...sass.opcodes import LOCAL_LOADS, LOCAL_MEMORY
from ..deletion import vanishing_edges
from .base import Match, Optimizer, match_edges
from .lg_queue import lg_share, queue_edges

_STACK = re.compile(r"\[\s*R1\s*(?:\+\s*(?:0x[0-9a-fA-F]+|\d+)\s*)?\]")
_ANNOTATION = re.compile(r"\(\*.*?\*\)")
SPILL_MARK = "SpillRefill"


def _clean(op: str) -> str:
    return _ANNOTATION.sub("", op).strip()


def _function_annotated(function) -> bool:
    return any(SPILL_MARK in (i.text or "") or any(SPILL_MARK in o for o in i.operands)
               for i in function.instructions)


def _frame_slot(ins) -> str | None:
    for op in ins.operands:
        op = _clean(op)
        if op.startswith("[") and _STACK.fullmatch(op):
            return op.replace(" ", "")
    return None


def _refilled_slots(function) -> frozenset:
    return frozenset(s for i in function.instructions
                     if is_local(i) and _is_load(i) and (s := _frame_slot(i)) is not None)


class SpillFacts:
    """What :func:`is_spill` needs to know of a whole function, computed once per function for
    whoever holds this object (one kernel's analysis): does nvdisasm annotate its spills, and which
    stack-frame slots does it reload."""

    def __init__(self) -> None:
        self._annotated: dict[int, tuple] = {}
        self._refilled: dict[int, tuple] = {}

    @staticmethod
    def _cached(cache: dict, function, compute):
        # keyed by identity; the function is kept with its value, so its id cannot be reused
        got = cache.get(id(function))
        if got is None or got[0] is not function:
            got = cache[id(function)] = (function, compute(function))
        return got[1]

    def annotated(self, function) -> bool:
        return self._cached(self._annotated, function, _function_annotated)

    def refilled(self, function) -> frozenset:
        return self._cached(self._refilled, function, _refilled_slots)


def _is_load(ins) -> bool:
    return ins.memory.load if ins.memory is not None else ins.base_opcode in LOCAL_LOADS


def is_local(ins) -> bool:
    if ins.memory is not None:
        return ins.memory.space == "local"
    return ins.base_opcode in LOCAL_MEMORY


def is_spill(ins, function=None, facts: SpillFacts | None = None) -> bool:
    """A register spill or refill: annotated by nvdisasm, else a constant stack-frame offset.
    ``facts``: the per-function facts of the caller's analysis (one is made for this call without)."""
    if not is_local(ins):
        return False
    text = (ins.text or "") + " ".join(ins.operands)
    if SPILL_MARK in text:
        return True
    if function is None:
        return _frame_slot(ins) is not None
    facts = facts if facts is not None else SpillFacts()
    if facts.annotated(function):
        return False   # the tool annotates spills; this local access is not one
    slot = _frame_slot(ins)
    if slot is None:
        return False
    return _is_load(ins) or slot in facts.refilled(function)


def local_cost(ctx, spill: bool):
    """Edges of every sample a class of local accesses (spills, or the rest) costs.

    Blame on the access (RAW on loads, WAR on stores) plus self samples on the
    access of any reason: the instruction disappears with the fix. Memoised per kernel: Register
    Reuse, Local Array and Memory Transaction Reduction all ask for it.
    """
    done = ctx.memo.setdefault("local_cost", {})
    if spill in done:
        return done[spill]
    memo = ctx.memo.setdefault("local_kind", {})
    facts = SpillFacts()

    def kind(off: int):
        got = memo.get(off)
        if got is None:
            site = ctx.site(off)
            if site is None or not is_local(site.instruction):
                got = memo[off] = "none"
            else:
                got = memo[off] = "spill" if is_spill(site.instruction, site.function, facts) else "array"
        return got

    want = "spill" if spill else "array"

    def keep(e):
        got = memo.get(e.def_)
        return (got if got is not None else kind(e.def_)) == want
    got = match_edges(ctx.edges_where(categories=_LOCAL_COST_CATEGORIES), keep)
    if got is not None:
        # what goes with the accesses: waits at them, their address arithmetic (analysis/deletion.py)
        deleted = frozenset(i.offset for fb in ctx.blames for i in fb.function.instructions
                            if kind(i.offset) == want)
        gone = vanishing_edges(ctx, deleted, got.edges)
        # the accesses' share of the LG queue: other loads and stores throttled behind them
        members = frozenset(o for o in deleted if o in ctx.pcs)
        extra = queue_edges(ctx, members, lg_share(ctx, members))
        if extra or gone:
            edges = got.edges + tuple(gone) + tuple(extra)
            got = Match(edges, sum(e.stall for e in edges), sum(e.latency for e in edges),
                        data={"queue_uses": frozenset(e.use for e in extra)} if extra else {})
    done[spill] = got
    return got


_LOCAL_COST_CATEGORIES = ("local_memory", "write_after_read", "self")


class RegisterReuse(Optimizer):
    id = "register_reuse"
    keeps = ()   # spills are local-memory traffic at every level
    title = "Register Reuse"
    suggestion = ("Time goes to register spills: local-memory stores and refills, their LSU queue throttling "
                  "and the waits on them. Reduce register pressure (shorter live ranges, fewer live "
                  "accumulators per thread), or allow more registers (__launch_bounds__ min-blocks, "
                  "-maxrregcount).")

    def match(self, ctx) -> Match | None:
        return local_cost(ctx, spill=True)

    def explained_throttle(self, ctx) -> dict[int, float]:
        """The memory-throttle samples of the spill instructions and of the queue they fill: removing
        the spills removes their LG-queue entries."""
        m = local_cost(ctx, spill=True)
        return m.throttle_by_use() if m is not None else {}
