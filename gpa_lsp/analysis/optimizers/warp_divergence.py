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

Why a divergent loop cannot converge below one warp iteration per item: the fix that converges a
loop whose trip count differs between lanes (a thread walking its own list) gives each item -- each
thread of today -- a warp whose lanes stride over the item's iterations. An item of d < 32
iterations then still takes one warp iteration, with 32 - d lanes idle. So the warp executions of a
loop instruction after the fix are at least the items (the threads that ran the kernel), at least
its lane executions / 32, at most its lane executions; the issue slots and the waits that vanish
are the rest (``converged_executions``; measured on the H100 by benchmarks/divergence).

Why the location is the branch: the fix is the branch condition, so the matched
samples hang on the branch that diverged (the nearest preceding instruction
with a divergent-branch count, else the nearest preceding predicated branch),
not on the instructions inside the paths.
"""

from __future__ import annotations

from ..blame import BlameEdge
from ..coalescing import latency_growth
from ..probe_tables import coalescing_name
from ..context import kernel_fact
from ..flow import with_cfg
from .base import Match, Optimizer, edge_sums

WARP = 32.0
MIN_LOOP_INACTIVE = 0.01   # a loop whose header runs with this share fewer lanes than its entry diverges in its trip count


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


def _active_lanes(p) -> float | None:
    return p.thread_executed / p.executed if p is not None and p.executed and p.thread_executed else None


def _divergent_trip_count(ctx, function, loop) -> bool:
    """Do the lanes that enter this loop run it different numbers of times? Then its header, which
    every iteration runs, runs with fewer active lanes than the code that enters it (a loop inside
    a divergent branch, with the same trip count for every lane, keeps the branch's active lanes;
    a branch inside the loop leaves the header's lanes alone)."""
    fn = with_cfg(function)
    block_of = {b.start: b for b in fn.blocks}
    inside = {fn.instructions[k].offset for k in loop.instructions}

    def lanes(block) -> float | None:
        return next((a for off in reversed(block.instructions) if (a := _active_lanes(ctx.pcs.get(off))) is not None),
                    None)

    entering = [a for e in fn.edges if e.dst == loop.header_offset and e.src in block_of
                and e.src not in inside and (a := lanes(block_of[e.src])) is not None]
    header = block_of.get(loop.header_offset)
    at_header = lanes(header) if header is not None else None
    if not entering or at_header is None:
        return False
    return at_header < max(entering) * (1.0 - MIN_LOOP_INACTIVE)


@kernel_fact
def converged_executions(ctx) -> dict[int, float]:
    """Offset -> the warp executions left of a divergent loop instruction after the loop converges.

    A source loop is its SASS loops (unrolled copies, remainder loops) of the same function and
    line; its instructions of the same line and opcode are one source operation, run once per lane
    iteration: lane executions ``L`` (their thread-executed counts, summed). Converged with a warp
    per item, the operation takes at least one warp execution per item that runs it (items: the
    threads that ran the kernel, at most ``L``) and at least ``L / 32``:
    ``max(min(items, L), L / 32)``, shared among the copies by their lane executions. Instructions
    outside such loops are not here (a converged branch takes its lane executions / 32)."""
    # the threads that ran the kernel: the most lanes any instruction outside loops ran with
    items = max((p.thread_executed for o, p in ctx.pcs.items()
                 if p.thread_executed and ctx.loop_of(o) is None), default=0)
    out: dict[int, float] = {}
    if items <= 0:
        return out
    for fb in ctx.blames:
        fn = fb.function
        groups: dict[tuple, list[int]] = {}
        owner: dict[int, int] = {}          # offset -> depth of the loop that groups it: the innermost
        for lp in sorted(ctx.loops.get(fn.name, ()), key=lambda lp: lp.depth):
            if not _divergent_trip_count(ctx, fn, lp):
                continue
            for k in lp.instructions:
                ins = fn.instructions[k]
                p = ctx.pcs.get(ins.offset)
                if p is None or not p.thread_executed or not p.executed:
                    continue
                loc = ins.loc
                owner[ins.offset] = lp.depth
                groups.setdefault((lp.line, lp.depth, loc.line if loc is not None else None, ins.opcode),
                                  []).append(ins.offset)
        for (_, depth, _, _), offs in groups.items():
            offs = sorted({o for o in offs if owner[o] == depth})
            if not offs:
                continue
            lanes = sum(ctx.pcs[o].thread_executed for o in offs)
            after = max(min(float(items), lanes), lanes / WARP)
            for o in offs:
                out[o] = after * ctx.pcs[o].thread_executed / lanes
    return out


def vanishing_share(ctx, offset: int) -> float:
    """Share of an instruction's warp executions that converging removes: its inactive share, or
    for a divergent loop's instruction ``1 - converged / executed`` (``converged_executions``)."""
    p = ctx.pcs.get(offset)
    w = inactive_share(p)
    if w <= 0:
        return 0.0
    after = converged_executions(ctx).get(offset)
    if after is None:
        return w
    return max(0.0, min(w, 1.0 - after / p.executed))


def _converged_gather_weight(ctx, load, gone: float) -> float:
    """The share of a divergent use's memory wait that converging removes.

    Converging divides the use's executions by 1 / (1 - gone), but each converged load gathers the
    sectors of every active lane, and the probe (benchmarks/coalescing, ``div_a*``) measured that
    one gather iteration takes longer with more sectors: ``latency_growth``. So the wait left is
    (1 - gone) x growth, not (1 - gone) (H100, 1 -> 32 lanes: 9x, not 32x). The lanes active after
    the fix: today's active lanes x executions now / after (a loop of short items keeps lanes idle:
    ``converged_executions``)."""
    if load is None or not load.sectors or not load.executed:
        return gone
    kept = 1.0 - gone
    now = load.sectors / load.executed
    after = min(WARP, now / kept) if kept > 0 else WARP
    return max(0.0, 1.0 - kept * latency_growth(coalescing_name(ctx.device, "divergence"), now, after))


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
            w = vanishing_share(ctx, off)
            if w <= 0:
                continue
            slots = active * (p.executed or 0) * w / executed
            if slots > 0:
                edges.append(BlameEdge(_controlling_branch(ctx, off), off, "active", "divergence", slots, 0.0, 0))
        for e in ctx.edges:
            w = vanishing_share(ctx, e.use)
            if w > 0 and e.latency > 0 and e.reason == "memory_dependency":
                w = _converged_gather_weight(ctx, pcs.get(e.def_), w)
            if w > 0 and e.latency > 0:
                edges.append(e._replace(def_=_controlling_branch(ctx, e.use), stall=e.latency * w,
                                        latency=e.latency * w))
        if not edges:
            return None
        return Match(tuple(edges), *edge_sums(edges))
