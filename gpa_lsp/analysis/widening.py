"""Narrow loads that hold the L1: what widening them to 16 bytes saves of its work.

Mechanism. A warp's load instruction costs the L1 one pass (a wavefront) per cache line its lanes
touch, however many bytes each lane takes from the line. When each lane walks its own contiguous
data (a row per thread: ``row[f]``, ``row[f + 1]``, ...) with 4-byte loads, the 32 lanes touch 32
lines per instruction and take 4 bytes from each: the L1 does 32 passes for 128 bytes. Loading the
same data as ``float4`` takes 16 bytes per lane and line in the same 32 passes, so the L1 does a
quarter of the passes for those loads; the L2 and DRAM move the same sectors as before.

Where the L1 holds the time (its share of peak is the highest of the kernel's units), the time
after is priced by the units: the L1's work falls by three quarters of the widenable loads' share
of the global sectors (ncu's per-instruction sector counts), the other units' work stays, and the
busiest unit after, relative to the L1 now, is the time left (the issue slots less the loads
merged). Calibration: kernels/gnn_aggregate
(a thread per node walks 32-float neighbour rows, L1 at 82%, L2 at 42%: 1.94x priced, float4
measured 2.25x) and kernels/restrict_fir (24 inputs per thread, L1 at 95%, L2 at 49%: 1.93x
priced, float4_in 1.81x).

Only loads that can be widened as they stand: 4-byte global loads from one base register at
immediate offsets covering at least 16 contiguous bytes (one lane's four consecutive elements), each
moving at least twice its ideal sectors (uncoalesced across the warp: coalesced loads already take
whole lines per pass). The grouping by base register is flow-insensitive (a register reused as the
base of another row joins the run); the sector condition and the L1's hold bound what that admits.
Without sector counts (CUPTI) nothing is priced.
"""

from __future__ import annotations

from ..sass.operands import address_registers, memory_operand
from .context import KernelContext, kernel_fact
from .gathers import _immediate, contiguous_runs

NARROW_BITS = 32
WIDE_BYTES = 16          # a float4: what one lane can take from its line in one access
UNCOALESCED = 2.0        # sectors over ideal sectors at or above which a load is uncoalesced
HELD_PCT = 60.0          # the L1's share of peak below which no unit is taken to hold the time


def _global(ins) -> bool:
    m = ins.memory
    return m is not None and m.space in ("global", "generic")


@kernel_fact
def widenable_loads(ctx: KernelContext) -> frozenset[int]:
    """Offsets of the 4-byte global loads a lane makes of its own contiguous data (runs of at least
    16 bytes from one base register) that move at least twice their ideal sectors."""
    groups: dict[tuple, list[tuple[int, int, int]]] = {}
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            m = ins.memory
            if not _global(ins) or not m.plain_load or m.width != NARROW_BITS:
                continue
            op = memory_operand(ins.operands) or ""
            groups.setdefault((fb.function.name, address_registers(op)), []).append(
                (_immediate(op), NARROW_BITS // 8, ins.offset))
    out = {o for loads in groups.values() for run, _ in contiguous_runs(loads, WIDE_BYTES) for o in run}
    pcs = ctx.pcs
    return frozenset(o for o in out if (p := pcs.get(o)) is not None and p.sectors and p.ideal_sectors
                     and p.sectors >= UNCOALESCED * p.ideal_sectors)


def widened_l1_estimate(ctx: KernelContext) -> tuple[float, float] | None:
    """(estimate, the widenable loads' share of the global sectors) where the L1 holds the time, else
    None (the module docstring)."""
    t = ctx.kernel.throughput
    if t is None:
        return None
    units = dict(t.units)
    l1 = units.get("l1")
    if not l1 or l1 < HELD_PCT or l1 < max(units.values()):
        return None
    wide = widenable_loads(ctx)
    if not wide:
        return None
    total = part = executed = loads = 0
    for o, p in ctx.pcs.items():
        executed += p.executed or 0
        site = ctx.site(o)
        if site is None or not p.sectors or not _global(site.instruction):
            continue
        total += p.sectors
        if o in wide:
            part += p.sectors
            loads += p.executed or 0
    if not total:
        return None
    share = part / total
    merged = 1.0 - NARROW_BITS / 8 / WIDE_BYTES      # of the widened loads' passes and instructions
    after = l1 * (1.0 - merged * share)
    # the other units' work stays: the L2's and DRAM's sectors, the SM pipes', and the issue slots'
    # less the loads the widening merges (three of four). Calibration proto_quadform: L1 at 98%,
    # issue at 72% and SM pipes at 71% of peak; the L1's work left alone priced 3.05x, float4_x
    # measured 1.31x
    issue = units.get("issue", 0.0) * (1.0 - merged * loads / executed if executed else 1.0)
    rest = max([v for k, v in units.items() if k in ("l2", "dram", "sm")] + [issue])
    return l1 / max(after, rest, 1e-9), share
