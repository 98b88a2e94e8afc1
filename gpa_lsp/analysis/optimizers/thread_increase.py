"""Thread Increase: too few warps per scheduler to hide latency (parallel estimator, Eq. 6-10).

Why it stays silent when the grid limits occupancy: then every block the
launch has is already resident, and larger blocks for the same work would
only make fewer of them; only a block's own resources (threads, registers,
shared memory, the blocks-per-SM cap) are what this advice changes.
"""

from __future__ import annotations

from ..estimate import thread_increase
from ..model import Fix
from .base import Estimator, Match, Optimizer
from .shared import block_size_fix


class ThreadIncrease(Optimizer):
    id = "thread_increase"
    title = "Thread Increase"
    kind = "parallel"
    method = Estimator.parallel
    suggestion = ("Too few warps are resident per scheduler to hide latency. Use larger blocks (at least 128 "
                  "threads), or reduce registers / shared memory per block if those limit occupancy.")

    def match(self, ctx) -> Match | None:
        occ, L = ctx.occupancy, ctx.launch
        if occ is None or L is None or occ.active_warps >= occ.max_warps:
            return None
        if occ.limiter == "grid":
            # the grid, not the block's resources, caps the resident warps: larger blocks mean
            # fewer of them for the same work, so no more warps per SM (Block Increase's case
            # when the grid is also smaller than the SM count)
            return None
        return Match((), float(ctx.total), float(ctx.latency), data={"warps": occ.active_warps})

    def estimate(self, ctx, match: Match) -> float:
        occ, L = ctx.occupancy, ctx.launch
        p = ctx.active / ctx.total if ctx.total else 0.0
        return thread_increase(occ.active_warps / 1.0, p, L.threads_per_block,
                               schedulers=ctx.device.schedulers_per_sm, max_warps=occ.max_warps)

    def fix(self, ctx, match: Match) -> Fix | None:
        return block_size_fix(ctx)
