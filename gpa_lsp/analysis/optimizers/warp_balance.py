"""Warp Balance: synchronization stalls (warps wait at barriers for the slowest one).

Why samples move to the barrier: a warp released by (or waiting in) a
``BAR.SYNC`` is often sampled on the instruction after it, with the barrier
reason. The fix concerns the barrier, so a synchronization sample on a
non-barrier instruction is matched to the nearest barrier before it in the
same function (when there is one).
"""

from __future__ import annotations

from .base import Match, Optimizer

BARRIERS = ("BAR", "BARRIER", "MEMBAR", "WARPSYNC", "SYNCS")


def _barrier_before(ctx, offset: int) -> int:
    site = ctx.site(offset)
    if site is None:
        return offset
    ins = site.function.instructions
    if ins[site.index].base_opcode in BARRIERS:
        return offset
    for k in range(site.index - 1, -1, -1):
        if ins[k].base_opcode in BARRIERS:
            return ins[k].offset
    return offset


class WarpBalance(Optimizer):
    id = "warp_balance"
    title = "Warp Balance"
    suggestion = ("Warps wait at a barrier. Balance the work before __syncthreads, use warp shuffles instead "
                  "of shared-memory reductions, keep several reductions in flight per barrier, or split "
                  "arrive and wait (cuda::barrier).")

    def match(self, ctx) -> Match | None:
        out = [e._replace(def_=_barrier_before(ctx, e.def_)) for e in ctx.edges if e.reason == "synchronization"]
        if not out:
            return None
        return Match(tuple(out), sum(e.stall for e in out), sum(e.latency for e in out))
