"""The LSU's local/global (LG) queue, shared by every global and local access of an SM partition.

When the queue is full, whoever issues the next LG instruction stalls (``lg_throttle``), whether
or not its own access is the cause. A change that deletes a class of LG instructions (aliasing
reloads, register spills, a local array) frees its share of the queue's entries, so the
``lg_throttle`` samples on the *other* LG instructions shrink by that share: the same rule as
Coalescing's and Bank Conflicts' share of the MIO queue (docs/optimizers.md).
"""

from __future__ import annotations

from ..blame import BlameEdge
from .base import reason_share


def is_lg(ins) -> bool:
    sp = ins.memory.space if ins.memory is not None else None
    return sp in ("global", "generic", "local")


def lg_share(ctx, members: set[int] | frozenset[int]) -> float:
    """The share of the LG queue's entries that ``members`` (offsets) make: LG instructions weighted
    by executed counts when the collector has them, else one per instruction seen issuing."""
    key = ("lg_share", frozenset(members))
    got = ctx.memo.get(key)
    if got is not None:
        return got
    have_counts = any(pc.executed for pc in ctx.pcs.values())
    lg = mine = 0.0
    for off, pc in ctx.pcs.items():
        site = ctx.site(off)
        if site is None or not is_lg(site.instruction):
            continue
        w = float(pc.executed or 0) if have_counts else (1.0 if pc.issued > 0 else 0.0)
        lg += w
        if off in members:
            mine += w
    got = ctx.memo[key] = mine / lg if lg > 0 else 0.0
    return got


def throttle_share(pc) -> float:
    """The part of a PC's memory-throttle samples that is LG-queue throttle (not drain or texture)."""
    return reason_share(pc, "lg_throttle", ("lg_throttle", "drain", "tex_throttle"))


def queue_edges(ctx, members, share: float) -> list[BlameEdge]:
    """``lg_throttle`` self samples on LG instructions outside ``members``, x ``share``."""
    if share <= 0:
        return []
    out: list[BlameEdge] = []
    for e in ctx.edges_where(categories=("self",)):
        if e.reason != "memory_throttle" or e.use in members:
            continue
        site = ctx.site(e.use)
        if site is not None and is_lg(site.instruction):
            f = share * throttle_share(ctx.pcs.get(e.use))
            if f > 0:
                out.append(e._replace(stall=e.stall * f, latency=e.latency * f))
    return out
