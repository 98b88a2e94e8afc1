"""Local Array: the cost of a dynamically indexed per-thread array kept in local memory.

Indexed with a run-time value, the array cannot live in registers; every
access is an ``LDL``/``STL``. As for spills (see ``register_reuse``), the fix
removes those instructions, so the match is every sample they cost: stalls
blamed on the loads (RAW) and stores (WAR), and the accesses' own samples
(LG-queue throttle, issue). Local accesses that nvdisasm marks as spills are
Register Reuse's.

Why the loop control of the loops around the accesses is matched too: an array
indexed in a loop becomes registers only when every index is a compile-time
constant, i.e. when the loops around the accesses are fully unrolled (the fix
this advice names). Full unrolling deletes those loops' control: the branches
in the loop and the compares that compute their predicates vanish, with all
their samples (their issue, their waits on the compare, the compare's waits on
the trip count). Only loops that hold a non-spill local access count.
"""

from __future__ import annotations

from ...sass.opcodes import PLAIN_BRANCHES
from .base import Match, Optimizer, edge_sums
from ...sass.patterns import is_local, is_spill
from .shared import local_cost



def _control(ctx) -> frozenset[int]:
    """Offsets of the branch and predicate-compare instructions of loops holding a local-array access."""
    out: set[int] = set()
    for fb in ctx.blames:
        fn = fb.function
        ins = fn.instructions
        for lp in ctx.loops.get(fn.name, ()):
            body = sorted(lp.instructions)
            if not any(is_local(ins[k]) and not is_spill(ins[k], fn) for k in body):
                continue
            preds: set[str] = set()
            for k in body:
                if ins[k].base_opcode in PLAIN_BRANCHES:
                    out.add(ins[k].offset)
                    if ins[k].predicate:
                        preds.add(ins[k].predicate)
            for k in body:
                i = ins[k]
                if i.base_opcode not in PLAIN_BRANCHES and i.dsts and set(i.dsts) <= preds:
                    out.add(i.offset)
    return frozenset(out)


class LocalArray(Optimizer):
    id = "local_array"
    keeps = ()   # a local array in registers removes its local-memory traffic at every level
    title = "Dynamically Indexed Local Array"
    suggestion = ("A per-thread array indexed with a run-time index lives in local memory. Index it with "
                  "compile-time constants (fully unrolled loops), replace it with scalars, or keep it in "
                  "shared memory or registers through warp shuffles.")

    def match(self, ctx) -> Match | None:
        m = local_cost(ctx, spill=False)
        if m is None:
            return None
        control = _control(ctx)
        seen = set(m.edges)
        extra = [e for e in ctx.edges if e.use in control and e not in seen]
        edges = m.edges + tuple(extra)
        return Match(edges, *edge_sums(edges), m.scopes, m.data,
                     queue_uses=m.queue_uses)

    def explained_throttle(self, ctx) -> dict[int, float]:
        """The memory-throttle samples of the local-array accesses and of the queue they fill."""
        m = local_cost(ctx, spill=False)
        return m.throttle_by_use() if m is not None else {}
