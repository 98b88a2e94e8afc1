"""The memory-parallelism roof: how much DRAM bandwidth the loads a loop keeps in flight can pull.

Why this bound exists: Eq. 2 lets every matched stall vanish. When a fix deletes the work that
used to overlap a load's latency (the integer division between a streaming load and the store
that uses it), the loop becomes a copy whose speed is set by Little's law -- bytes in flight
per SM / loaded latency -- not by the DRAM's peak. The loaded latency is not in the original's
samples (the division hid it), so it comes from the device: ``scripts/gpu/mlp_probe.cu``
measures, under ncu, the DRAM share of peak a streaming loop reaches with F bytes of loads in
flight per SM (``gpa_lsp/data/memory_parallelism.json``; on an H100 8 KB per SM reach 72% for a
copy, 69% for a read-only sum; 32 KB reach 85-92%). With 16 or more warps per SM, the
combinations of warps x loads per warp x bytes per load that give the same F reach the same share
within 20% (fewer warps each issuing more loads reach less), so F is the one variable, and the
roof takes the highest share measured at or below F (a bound must not be tighter than the
hardware).

A change that keeps the kernel's DRAM traffic (``Optimizer.keeps`` holds ``dram``) and
multiplies the bytes each warp keeps in flight by ``Optimizer.mlp_factor`` (1 for arithmetic
changes, the unroll factor for unrolling; None when not known, e.g. reordering) then gains at
most ``attainable(F') / measured DRAM share``: the same bytes at no more than the share that
F' bytes in flight can pull.

F for the code as it is: in the hottest innermost loop with global loads (a kernel with no such
loop: its hottest loop-free stretch between block barriers, ``_hottest_phase``), loads are grouped by
dependency level within one iteration (a load whose address comes from another load's value is
one level deeper); a warp has the largest level in flight at once, 32 threads x the load's
width. The largest level, not the first, so the bound stays a bound (more bytes, higher roof).
The curve is the copy's (reads and writes: DRAM turns the bus around, 85% at the top against 92%
for reads) when the loop stores to global memory, or for a phase when the block does in any of its
phases at a per-thread address (a row loaded in the first, written in the last: the kernel's DRAM
share counts both; one result per block is no stream).
The bound is dropped when the original already runs its DRAM above the roof for its own F: then
the loop's loads are in flight across iterations (the compiler pipelined them, or caches serve
them) and F as counted says nothing. A device missing from the table takes the curves of a probed
device of its chip (``probe_tables.mlp_name``); one of no probed chip gets no roof:
``scripts/gpu/record_mlp.sh`` measures one in under a minute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..sass.defuse import register_defs, register_uses
from ..sass.opcodes import CTA_BARRIERS
from ..sass.operands import address_registers, memory_operand
from .context import KernelContext, kernel_fact
from .probe_tables import mlp_curve_scale, mlp_devices, mlp_name

BYTES_PER_THREAD_DEFAULT = 4


@dataclass(frozen=True)
class Roof:
    loop_header: int            # offset of the loop whose loads were counted (a phase's first instruction)
    warp_bytes: int             # bytes of loads one warp has in flight (the largest level)
    warps: float                # resident warps per SM
    pattern: str                # "copy" (the loop stores to global memory) | "read"
    dram_pct: float             # the kernel's measured DRAM share of peak
    attainable_pct: float       # what warp_bytes x warps reach on this device (the code as it is)

    @property
    def inflight(self) -> float:
        return self.warp_bytes * self.warps


@lru_cache(maxsize=None)
def curve(device_name: str, pattern: str) -> tuple[tuple[float, float], ...]:
    """(bytes in flight per SM, best DRAM share % reached with at most that many), rising, under a
    device name of ``memory_parallelism.json`` (a kernel's: ``mlp_name``); empty without its curves."""
    points = mlp_devices().get(device_name, {}).get(pattern, [])
    best: dict[float, float] = {}
    for p in points:
        f = float(p["inflight_bytes_per_sm"])
        best[f] = max(best.get(f, 0.0), float(p["dram_pct"]))
    out, top = [], 0.0
    for f in sorted(best):
        top = max(top, best[f])
        out.append((f, top))
    return tuple(out)


def turnaround(device) -> float | None:
    """The share of a read stream's best DRAM rate that a stream writing as many bytes as it reads
    reaches on ``device`` (or the probed device of its chip): the memory-parallelism probe's copy
    over its read at their highest (the H100 85.3% against 92.0%, the H200 83.6% against 93.3%:
    DRAM turns its bus around between reads and writes). None without both curves."""
    name = mlp_name(device)
    c, r = curve(name, "copy"), curve(name, "read")
    if not c or not r or r[-1][1] <= 0:
        return None
    return min(1.0, c[-1][1] / r[-1][1])


def attainable(points: tuple[tuple[float, float], ...], inflight: float) -> float | None:
    """DRAM share % reachable with ``inflight`` bytes per SM: linear in log2(bytes) between measured
    points, proportional to the bytes below the first (Little's law at fixed latency), flat above
    the last. None without points."""
    if not points or inflight <= 0:
        return None
    f0, p0 = points[0]
    if inflight <= f0:
        return p0 * inflight / f0
    for (fa, pa), (fb, pb) in zip(points, points[1:]):
        if inflight <= fb:
            t = (math.log2(inflight) - math.log2(fa)) / (math.log2(fb) - math.log2(fa))
            return pa + t * (pb - pa)
    return points[-1][1]


def _global_load(ins) -> bool:
    m = ins.memory
    return m is not None and m.space == "global" and m.plain_load


def level_bytes(instructions) -> dict[int, int]:
    """Bytes one warp loads per dependency level of global loads, over one pass of ``instructions``
    (in program order; values from earlier iterations count as level 0)."""
    level: dict[str, int] = {}
    out: dict[int, int] = {}
    for ins in instructions:
        src = max((level.get(r, 0) for r in ins.srcs), default=0)
        if _global_load(ins):
            own = src + 1
            width = ins.memory.width // 8 if ins.memory.width else BYTES_PER_THREAD_DEFAULT
            out[own] = out.get(own, 0) + 32 * width
            for r in ins.dsts:
                level[r] = own
        else:
            for r in ins.dsts:
                level[r] = src
    return out


@kernel_fact
def roof(ctx: KernelContext) -> Roof | None:
    """The code's memory parallelism and its roof; None without the inputs (no DRAM measurement,
    no occupancy, an unmeasured device, no loop with global loads). A fact of the kernel."""
    t = ctx.kernel.throughput
    dram = t.pct("dram") if t is not None else None
    if not dram or ctx.occupancy is None or ctx.occupancy.active_warps <= 0:
        return None
    total_at = ctx.total_at
    best = None
    for fb in ctx.blames:
        fn = fb.function
        loops = ctx.loops.get(fn.name, ())
        parents = {o.parent for o in loops}
        for lp in loops:
            if lp.header_offset in parents:     # innermost loops only
                continue
            body = [fn.instructions[i] for i in sorted(lp.instructions)]
            if any(_global_load(i) for i in body):
                samples = sum(total_at.get(i.offset, 0) for i in body)
                if best is None or samples > best[0]:
                    best = (samples, lp, body)
    if best is None:
        best = _hottest_phase(ctx)
    if best is None:
        return None
    _, lp, body = best
    levels = level_bytes(body)
    # the DRAM traffic the roof's share is of: the loop's, or for a phase the block's (its iteration
    # is the block, whose stores may lie in another phase: a row loaded, reduced, then written)
    if lp is not None:
        writes = any(i.memory is not None and i.memory.global_write for i in body)
    else:
        writes = _block_streams_out(ctx)
    pattern = "copy" if writes else "read"
    points = curve(mlp_name(ctx.device), pattern)
    warp_bytes = max(levels.values())
    warps = ctx.occupancy.active_warps
    reach = attainable(points, warp_bytes * warps)
    if reach is None:
        return None
    reach *= mlp_curve_scale(ctx)        # a borrowed curve: its bytes per second on this device's memory
    return Roof(lp.header_offset if lp is not None else body[0].offset, warp_bytes, warps, pattern, dram, reach)


def _block_streams_out(ctx: KernelContext) -> bool:
    """Does a block's pass (the code outside every loop) store to global memory at an address that
    depends on the thread, so that its writes stream as its loads do (a row loaded, reduced and
    written back)? A store whose address is the same for the whole block (``out[blockIdx.x]``, one
    result per block) moves next to nothing."""
    for fb in ctx.blames:
        fn = fb.function
        in_loop = {i for lp in ctx.loops.get(fn.name, ()) for i in lp.instructions}
        for k, ins in enumerate(fn.instructions):
            if k in in_loop or ins.memory is None or not ins.memory.global_write:
                continue
            if any(_from_thread_index(fn, k, r, 0) for r in address_registers(memory_operand(ins.operands))):
                return True
    return False


_THREAD_INDEX = ("SR_TID", "SR_LANEID")


def _from_thread_index(fn, index: int, reg: str, depth: int) -> bool:
    """``reg`` at instruction ``index`` is computed from the thread's index (walking back to the
    nearest earlier def in layout order, a few levels deep)."""
    if depth > 10 or not reg.startswith("R") or reg == "RZ":
        return False
    for k in range(index - 1, -1, -1):
        ins = fn.instructions[k]
        if reg in register_defs(ins):
            if ins.base_opcode in ("S2R", "CS2R"):
                return any(op.startswith(_THREAD_INDEX) for op in ins.operands[1:])
            if ins.memory is not None and ins.memory.load:
                return False
            return any(_from_thread_index(fn, k, r, depth + 1) for r in register_uses(ins))
    return False


def _hottest_phase(ctx: KernelContext):
    """(samples, None, instructions) of the hottest stretch of loop-free code between block
    barriers that loads from global memory; None when there is none.

    Why phases: a kernel without a loop over its loads (a block per row, its loads unrolled) is a
    streaming loop whose iteration is a block: each warp has its loads of one phase in flight, then
    computes; loads on either side of a ``BAR`` cannot be in flight together (the barrier waits
    for the loads the phase before it consumes), so the levels are counted per phase."""
    total_at = ctx.total_at
    best = None
    for fb in ctx.blames:
        fn = fb.function
        in_loop = {i for lp in ctx.loops.get(fn.name, ()) for i in lp.instructions}
        phase: list = []
        phases = [phase]
        for k, ins in enumerate(fn.instructions):
            if ins.base_opcode in CTA_BARRIERS:
                phase = []
                phases.append(phase)
            elif k not in in_loop:
                phase.append(ins)
        for body in phases:
            if any(_global_load(i) for i in body):
                samples = sum(total_at.get(i.offset, 0) for i in body)
                if best is None or samples > best[0]:
                    best = (samples, None, body)
    return best


def mlp_bound(ctx: KernelContext, factor: float) -> tuple[float, float | None]:
    """(speedup bound, attainable DRAM share %) for a change that multiplies each warp's bytes in
    flight by ``factor``; (inf, None) when there is no roof or the measurement contradicts it."""
    r = roof(ctx)
    if r is None or r.dram_pct >= r.attainable_pct:
        return math.inf, None
    reach = attainable(curve(mlp_name(ctx.device), r.pattern), r.inflight * factor)
    if reach is None:
        return math.inf, None
    reach *= mlp_curve_scale(ctx)
    return max(1.0, reach / r.dram_pct), reach
