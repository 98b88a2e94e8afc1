"""What a latency-bound per-lane copy walk runs at once a warp copies each row: the copywalk probe's
coalesced copy (``benchmarks/coalescing/copywalk_probe.cu``; the ``copywalk`` rows of
``gpa_lsp/data/coalescing.json``).

Why: a thread that walks its own row with a load and a store per step (``for d: dst[d] = src[d]``)
through pointers that may alias runs a serial chain of round trips, and with many warps per SM each
lane's line no longer survives in the L1 or the L2 until its next step: the copywalk probe's per-lane
walk read 10x its data from DRAM at 64 warps per SM and ran 3.2x slower there than at 8. No unit is
held (the chain, not a unit, sets the time), so the unit model prices nothing, and the matched
stalls leave out that the coalesced copy moves only its own bytes. What the coalesced copy runs at
instead is measured: a warp per row of the probe (``walk_g32``) moved its bytes at 43% of DRAM's peak
at 64 warps per SM (6.7% at 8: it is latency-bound too, a load then a store per warp step). So the
time after is the walk's ideal bytes (its accesses' ideal sectors) at that share of the kernel's
DRAM peak, at the probed warps per SM nearest the kernel's; the estimate is the profiled time over
it. Grounded on the calibration case index_select_rows (a thread per 256-byte row, 64 warps per SM:
12.3x measured for a warp per row; 11.9x priced).

Only where the unit model found no held unit: a walk whose L1 or L2 holds the kernel is priced by
the units it unloads (coalescing.py, lanewalk.py)."""

from __future__ import annotations

from .coalescing import Model, borrowed_share_scale
from .curves import nearest_warps
from .lanewalk import walk
from .probe_tables import coalescing_rows, dram_peak

COALESCED = "walk_g32"     # the probe's warp per row
WIDE = "walkv4_g1"         # the probe's thread per row moving 16-byte elements
WIDE_BITS = 128
# the probe's thread per row moving elements of this many bits: what widening to 16 bytes is measured against
NARROW = {32: "walk_g1", 16: "walkh_g1"}


def is_copy_walk(ctx) -> bool:
    """Whether the kernel's per-lane walk (``lanewalk.walk``, no gather) stores to global memory in the
    loop of its loads: a copy, each step a load then a store."""
    w = walk(ctx)
    if w is None or w.gather:
        return False
    for o in w.loads:
        site, lp = ctx.site(o), ctx.loop_of(o)
        if site is None or lp is None:
            continue
        ins = site.function.instructions
        for i in lp.instructions:
            mem = ins[i].memory
            if mem is not None and mem.global_write and not mem.atomic:
                return True
    return False


def _priced(ctx, m: Model | None) -> bool:
    """Whether these estimates apply: a per-lane copy walk for which the unit model ``m`` found no
    held unit (its unit estimate is 1) and the kernel's occupancy is known."""
    occ = ctx.occupancy
    return (m is not None and m.unit_estimate <= 1.0 and occ is not None and occ.active_warps > 0
            and is_copy_walk(ctx))


def coalesced_share(ctx) -> float | None:
    """The probe's coalesced copy's DRAM share of peak (%) at the probed warps per SM nearest the
    kernel's, on the kernel's device (a borrowed row's share converted: ``borrowed_share_scale``)."""
    occ = ctx.occupancy
    rows = [r for r in coalescing_rows(ctx.device, "copywalk") if r["config"] == COALESCED and r.get("dram_pct")]
    if not rows or occ is None or occ.active_warps <= 0:
        return None
    return float(nearest_warps(rows, occ.active_warps)["dram_pct"]) * borrowed_share_scale(ctx, "copywalk")


def copy_walk_estimate(ctx, m: Model | None) -> float | None:
    """The profiled time over the coalesced copy's (the walk's ideal bytes, ``m.ideal_bytes``, at
    ``coalesced_share`` of the kernel's DRAM peak), for a per-lane copy walk no unit holds (the unit
    model ``m`` found none: its unit estimate is 1); None otherwise."""
    if not _priced(ctx, m) or m.ideal_bytes <= 0:
        return None
    tp = ctx.kernel.throughput
    peak = dram_peak(tp.dram_bytes, tp.duration_ns, tp.pct("dram"))      # bytes per second
    share = coalesced_share(ctx)
    if peak is None or share is None or share <= 0:
        return None
    return tp.duration_ns * 1e-9 / (m.ideal_bytes / (share / 100.0 * peak))


def widened_estimate(ctx, m: Model | None) -> float | None:
    """For a per-lane copy walk no unit holds whose loads are narrower than 16 bytes: what the probe's
    thread-per-row walk of elements that wide gained from moving 16 bytes per step instead (floats:
    a quarter of the round trips in each thread's chain, 3.3x at 64 warps per SM; halves: an eighth,
    6.2x), at the probed warps per SM nearest the kernel's; None otherwise, and for element widths
    the probe did not walk (bytes, doubles). Memory Transaction Reduction's "fewer, wider accesses"
    on such a walk (index_select_rows' float4: 3.73x)."""
    if not _priced(ctx, m):
        return None
    widths = [site.instruction.memory.width for o in walk(ctx).loads
              if (site := ctx.site(o)) is not None and site.instruction.memory is not None]
    if not widths or max(widths) >= WIDE_BITS or max(widths) not in NARROW:
        return None
    narrow = NARROW[max(widths)]
    rows = {(r["config"], r["warps_per_sm"]): r for r in coalescing_rows(ctx.device, "copywalk") if r.get("median_ms")}
    wide = [r for (c, w), r in rows.items() if c == WIDE and (narrow, w) in rows]
    if not wide:
        return None
    w = nearest_warps(wide, ctx.occupancy.active_warps)["warps_per_sm"]
    return rows[narrow, w]["median_ms"] / rows[WIDE, w]["median_ms"]
