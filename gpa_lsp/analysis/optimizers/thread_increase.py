"""Thread Increase: too few warps per scheduler to hide latency (parallel estimator, Eq. 6-10).

Only where the block size is what limits occupancy (the blocks-per-SM cap, or thread slots a
block size does not divide): larger blocks then put more warps on each SM. Why it stays silent
otherwise: when registers or shared memory limit, a larger block needs the same per thread and no
more warps fit (the fix there is fewer registers, which changes the code: on the calibration
cases a `__launch_bounds__` that forced it spilled and ran slower); when the grid limits, every
block the launch has is already resident, and larger blocks for the same work would only make
fewer of them (Block Increase's case, analysis/waves.py).
"""

from __future__ import annotations

from ..estimate import thread_increase
from ..model import Fix
from .base import ChangeKind, Estimator, Match, Optimizer
from .shared import block_size_fix


# What the block size itself limits: the blocks-per-SM cap (small blocks: 32 blocks of 16 threads
# are 32 warps of 64) or the thread slots when the block does not divide them
BLOCK_SIZE_LIMITS = ("blocks", "threads")


class ThreadIncrease(Optimizer):
    id = "thread_increase"
    title = "Thread Increase"
    kind = ChangeKind.parallel
    method = Estimator.parallel
    suggestion = ("Too few warps are resident per scheduler to hide latency, and the block size is what "
                  "limits them: use larger blocks (at least 128 threads).")

    def match(self, ctx) -> Match | None:
        occ, L = ctx.occupancy, ctx.launch
        if occ is None or L is None or occ.active_warps >= occ.max_warps:
            return None
        if occ.limiter not in BLOCK_SIZE_LIMITS:
            # registers or shared memory cap the resident warps: a larger block needs as much per
            # thread, so no more warps fit; the grid capping them means every block the launch
            # has is resident, and larger blocks for the same work are fewer of them (Block
            # Increase's case)
            return None
        return Match((), float(ctx.total), float(ctx.latency), data={"warps": occ.active_warps})

    def estimate(self, ctx, match: Match) -> float:
        occ, L = ctx.occupancy, ctx.launch
        p = ctx.active / ctx.total if ctx.total else 0.0
        return thread_increase(occ.active_warps / 1.0, p, L.threads_per_block,
                               schedulers=ctx.device.schedulers_per_sm, max_warps=occ.max_warps)

    def fix(self, ctx, match: Match) -> Fix | None:
        return block_size_fix(ctx)
