"""Shared Memory Bank Conflicts: execution-dependency stalls on shared loads that conflict."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges


def conflict_share(pc) -> float:
    if pc is None or not pc.bank_conflicts or not pc.executed:
        return 0.0
    return pc.bank_conflicts / (pc.bank_conflicts + pc.executed)


class SharedMemoryBankConflicts(Optimizer):
    id = "shared_memory_bank_conflicts"
    title = "Shared Memory Bank Conflicts"
    suggestion = ("Shared-memory accesses conflict on banks and replay. Pad the array (e.g. [32][33]) or "
                  "change the index so that a warp's lanes hit distinct banks.")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs

        def keep(e):
            if e.category == "shared_memory":
                return conflict_share(pcs.get(e.def_))
            if e.category == "self" and e.reason == "pipe_busy":
                return conflict_share(pcs.get(e.use))
            return False
        return match_edges(ctx.edges, keep)
