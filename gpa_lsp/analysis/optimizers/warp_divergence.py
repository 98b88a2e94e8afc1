"""Warp Divergence: work done with part of a warp's lanes idle (needs executed/thread-executed counts).

Why issue slots, not only stalls: a divergent warp issues every instruction of
each path it takes, each with part of its lanes masked off. Converging the
branch makes the same threads' work take ``1 - inactive`` of those warp
instructions. So the matched samples are (a) the kernel's issued samples times
the share of warp instructions (``executed``) that divergence wastes -- the
issue slots it costs -- plus (b) the latency samples blamed on divergent
uses, scaled by their inactive share. Counting only blamed stalls misses (a),
which is all of the cost in an issue-bound kernel.

Why a gather's wait is not removed in proportion to idle lanes: a converged iteration gathers
every lane's sectors and takes longer; the probe's curve prices it (``_converged_gather_weight``).

Why the location is the branch: the fix is the branch condition, so the matched
samples hang on the branch that diverged (the nearest preceding instruction
with a divergent-branch count, else the nearest preceding predicated branch),
not on the instructions inside the paths.
"""

from __future__ import annotations

from ..blame import BlameEdge
from ..coalescing import latency_growth
from .base import Match, Optimizer

WARP = 32.0


def inactive_share(pc) -> float:
    if pc is None or not pc.executed or pc.thread_executed is None:
        return 0.0
    return max(0.0, 1.0 - pc.thread_executed / (32.0 * pc.executed))


def _controlling_branch(ctx, offset: int) -> int:
    site = ctx.site(offset)
    if site is None:
        return offset
    ins = site.function.instructions
    fallback = None
    for k in range(site.index - 1, -1, -1):
        i = ins[k]
        p = ctx.pcs.get(i.offset)
        if p is not None and p.divergent_branches:
            return i.offset
        if fallback is None and i.base_opcode == "BRA" and i.predicate is not None \
                and inactive_share(p) < inactive_share(ctx.pcs.get(offset)):
            fallback = i.offset
    return fallback if fallback is not None else offset


def _converged_gather_weight(ctx, load, inactive: float) -> float:
    """The share of a divergent use's memory wait that converging removes.

    Converging divides the iterations by 1 / active share, but each converged load gathers the
    sectors of every lane, and the probe (benchmarks/coalescing, ``div_a*``) measured that one
    gather iteration takes longer with more sectors: ``latency_growth``. So the wait left is
    active share x growth, not active share (H100, 1 -> 32 lanes: 9x, not 32x)."""
    if load is None or not load.sectors or not load.executed:
        return inactive
    active = 1.0 - inactive
    now = load.sectors / load.executed
    after = min(WARP, now / active) if active > 0 else WARP
    return max(0.0, 1.0 - active * latency_growth(ctx.device.name, now, after))


class WarpDivergence(Optimizer):
    id = "warp_divergence"
    keeps = ("dram", "l2")   # converged warps make fewer, fuller L1 requests for the same bytes
    title = "Warp Divergence"
    suggestion = ("Lanes of a warp take different paths, so each path runs with part of the warp idle. "
                  "Make the branch condition uniform per warp (reorder data, sort work, or make lanes do "
                  "the same amount of work).")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        executed = sum(p.executed or 0 for p in pcs.values())
        if executed <= 0:
            return None
        edges: list[BlameEdge] = []
        active = float(ctx.active)
        for off, p in pcs.items():
            w = inactive_share(p)
            if w <= 0:
                continue
            slots = active * (p.executed or 0) * w / executed
            if slots > 0:
                edges.append(BlameEdge(_controlling_branch(ctx, off), off, "active", "divergence", slots, 0.0, 0))
        for e in ctx.edges:
            w = inactive_share(pcs.get(e.use))
            if w > 0 and e.latency > 0 and e.reason == "memory_dependency":
                w = _converged_gather_weight(ctx, pcs.get(e.def_), w)
            if w > 0 and e.latency > 0:
                edges.append(e._replace(def_=_controlling_branch(ctx, e.use), stall=e.latency * w,
                                        latency=e.latency * w))
        if not edges:
            return None
        return Match(tuple(edges), sum(e.stall for e in edges), sum(e.latency for e in edges))
