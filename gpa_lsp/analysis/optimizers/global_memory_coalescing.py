"""Global Memory Coalescing: memory stalls blamed on loads that fetch more sectors than they use."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges


def excess(pc) -> float:
    """1 - ideal/actual sectors of a global access (0 when unknown or perfect)."""
    if pc is None or not pc.sectors or pc.ideal_sectors is None:
        return 0.0
    return max(0.0, 1.0 - pc.ideal_sectors / pc.sectors)


class GlobalMemoryCoalescing(Optimizer):
    id = "global_memory_coalescing"
    title = "Global Memory Coalescing"
    suggestion = ("Global accesses fetch more 32-byte sectors than the warp uses. Make consecutive threads "
                  "touch consecutive addresses (threadIdx.x on the fastest index, blocks at least 32 wide), "
                  "or stage through shared memory.")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        return match_edges(ctx.edges, lambda e: excess(pcs.get(e.def_)) if e.category == "global_memory" else False)
