"""Block Increase: fewer blocks than SMs leaves SMs idle (parallel estimator, Eq. 6-10).

Why no "idle SMs" floor: the work of the busy SMs does not speed up by
``sm_count / blocks``, because each busy scheduler already overlaps its many
warps. The estimate is the busiest scheduler's time ``k / P(k)`` before and
after the same warps are spread over every SM (see estimate.block_increase).
"""

from __future__ import annotations

from ..estimate import block_increase
from ..model import Fix
from .base import Estimator, Match, Optimizer
from .shared import block_size_fix


class BlockIncrease(Optimizer):
    id = "block_increase"
    title = "Block Increase"
    kind = "parallel"
    method = Estimator.parallel
    suggestion = ("The grid has fewer blocks than the GPU has SMs. Launch more, smaller blocks (or split the "
                  "work of a block) so that every SM has work.")

    def match(self, ctx) -> Match | None:
        L = ctx.launch
        if L is None or L.blocks >= ctx.device.sm_count or L.threads_per_block <= 128 or ctx.occupancy is None:
            return None
        return Match((), float(ctx.total), float(ctx.latency), data={"blocks": L.blocks})

    def estimate(self, ctx, match: Match) -> float:
        occ = ctx.occupancy
        shares = {c: ctx.share(c) for c in ("memory_throttle", "not_selected", "pipe_busy")}
        p = ctx.active / ctx.total if ctx.total else 0.0
        L = ctx.launch
        total_warps = L.blocks * occ.warps_per_block
        return block_increase(occ.active_warps, p, shares, schedulers=ctx.device.schedulers_per_sm,
                              total_warps=total_warps, sm_count=ctx.device.sm_count)

    def fix(self, ctx, match: Match) -> Fix | None:
        return block_size_fix(ctx, smaller=True)
