"""Warp Balance: synchronization stalls (warps wait at barriers for the slowest one)."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges


class WarpBalance(Optimizer):
    id = "warp_balance"
    title = "Warp Balance"
    suggestion = ("Warps wait at a barrier. Balance the work before __syncthreads, use warp shuffles instead "
                  "of shared-memory reductions, keep several reductions in flight per barrier, or split "
                  "arrive and wait (cuda::barrier).")

    def match(self, ctx) -> Match | None:
        return match_edges(ctx.edges, lambda e: e.reason == "synchronization")
