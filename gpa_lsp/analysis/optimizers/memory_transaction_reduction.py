"""Memory Transaction Reduction: memory-throttle stalls (too many memory requests in flight).

Why it leaves out part of some throttle samples: GPA ranks the specific advice
over the generic one. When the throttled instruction is a global access whose
sectors exceed the ideal (per-instruction counters from Nsight Compute), the
``1 - ideal/sectors`` share of its throttle samples is explained by Global
Memory Coalescing (the excess requests *are* the throttle); only the rest is
this optimizer's. The same holds for ``drain`` samples caused by excess store
sectors. Without sector counters (CUPTI) nothing changes.

The same rule applies to throttle that other specific advice explains per
instruction: LG-queue entries taken by aliasing reloads (Restrict Pointer)
and by spill or local-array accesses (Register Reuse, Local Array). Their
throttle samples go with the instructions that cause them: removing those
instructions empties the queue, which is that advice's claim, so the generic
optimizer keeps only the throttle nobody more specific explains: what every
registered optimizer declares through ``Optimizer.explained_throttle``,
subtracted per use PC. A new specific optimizer gets that credit by
overriding the hook; this file does not name it.
"""

from __future__ import annotations

from .base import REGISTRY, Match, Optimizer, match_edges
from .shared import drain_edges, excess


class MemoryTransactionReduction(Optimizer):
    id = "memory_transaction_reduction"
    generic = True
    keeps = ()   # fewer or wider transactions change the work of every memory level
    title = "Memory Transaction Reduction"
    suggestion = ("The memory pipeline is throttled. Issue fewer, wider and coalesced accesses (float4 "
                  "loads), reuse data through shared memory or registers, move read-only data to constant "
                  "or texture memory.")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        drained = {}
        for d in drain_edges(ctx):
            drained[d.use] = drained.get(d.use, 0.0) + d.stall * excess(pcs.get(d.def_))

        explained: dict[int, float] = {}
        for peer in REGISTRY:
            if peer is self:
                continue
            for off, n in peer.explained_throttle(ctx).items():
                explained[off] = explained.get(off, 0.0) + n
        throttle = ctx.edges_where(reasons=("memory_throttle",))
        own: dict[int, float] = {}
        for e in throttle:
            own[e.use] = own.get(e.use, 0.0) + e.stall

        def left(e) -> float:
            """The share of ``e``'s use PC throttle no specific advice explains."""
            n = own.get(e.use, 0.0)
            return max(0.0, 1.0 - explained.get(e.use, 0.0) / n) if n > 0 else 1.0

        def keep(e):
            return _keep(e) * left(e)

        def _keep(e) -> float:
            if e.def_ in drained and not (pcs[e.def_].sectors or 0):
                # drain samples: the part caused by excess store sectors is coalescing's
                n = pcs[e.def_].stall_dict().get("drain", 0)
                return max(0.0, 1.0 - drained[e.def_] / n) if n else 1.0
            return 1.0 - excess(pcs.get(e.def_))
        return match_edges(throttle, keep)
