"""Memory Transaction Reduction: memory-throttle stalls (too many memory requests in flight)."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges


class MemoryTransactionReduction(Optimizer):
    id = "memory_transaction_reduction"
    title = "Memory Transaction Reduction"
    suggestion = ("The memory pipeline is throttled. Issue fewer, wider and coalesced accesses (float4 "
                  "loads), reuse data through shared memory or registers, move read-only data to constant "
                  "or texture memory.")

    def match(self, ctx) -> Match | None:
        return match_edges(ctx.edges, lambda e: e.reason == "memory_throttle")
