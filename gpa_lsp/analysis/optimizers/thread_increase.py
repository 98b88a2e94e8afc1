"""Thread Increase: too few warps per scheduler to hide latency (parallel estimator, Eq. 6-10).

Why it stays silent when the grid limits occupancy: then every block the
launch has is already resident, and larger blocks for the same work would
only make fewer of them; only a block's own resources (threads, registers,
shared memory, the blocks-per-SM cap) are what this advice changes.
"""

from __future__ import annotations

from ...profile.demangle import unqualified_name
from ..estimate import thread_increase
from ..model import Fix
from ..sources import launch_sites
from .base import Estimator, Match, Optimizer


def block_size_fix(ctx, *, smaller: bool = False) -> Fix | None:
    entry = ctx.entry
    name = unqualified_name(entry.demangled or entry.name)
    files = []
    for ins in entry.instructions:
        if ins.loc and ins.loc.file not in files:
            files.append(ins.loc.file)
    for f in files:
        lines = ctx.reader(f)
        if lines is None:
            continue
        for site in launch_sites(f, lines, name):
            cur = site.current
            if smaller:
                new = max(32, cur // 2) if cur > 128 else cur
            else:
                new = max(128, cur * 2) if cur < 128 else min(ctx.device.max_threads_per_block, cur * 2)
            if new != cur:
                return Fix("block_size", f, site.line, {"size": new, "current": cur,
                                                        "columns": list(site.columns), "dims": list(site.dims)})
    return None


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
