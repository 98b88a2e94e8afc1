"""Block Increase: the grid is less than one wave (analysis/waves.py), so warp slots or whole SMs idle.

Two mechanisms, told apart in the SASS:

* a *grid-stride loop* shares the work among whatever grid is launched: a full wave (SMs x
  resident blocks) is more warps for the same work. The estimate is the whole GPU's issue rate
  at the full wave's warps over today's (Eq. 8/9 per scheduler, times the SMs and schedulers
  with work), at most what the full wave's loads in flight can pull from DRAM
  (``waves.full_wave_memory_bound``). Where the profile counts executed instructions (ncu), the
  loop's iterations per warp bound the warps that get work: a loop of 3 iterations on 132 blocks
  has work for 396 blocks, not for a wave of 2112. The grown kernel still pays the fixed ramp and
  tail (``KERNEL_RAMP_NS``, below), which do not shrink with the work per warp.
* a *work loop* (analysis/worksplit.py): each thread runs a serial loop whose trip count depends
  neither on the thread nor on data and whose iterations carry nothing but inductions, and the
  loop holds most of the samples. Cut into ``S`` strips over a new grid dimension, it is the same
  instructions on ``S`` times the warps: the grid-stride estimate with ``S`` = the strips that fill
  one wave (at most the loop's passes per warp where ncu counted them), the code outside the loop
  run once per strip (Amdahl on the samples outside it), the DRAM share at most what strips reach
  (``STRIPS_DRAM_PCT``), plus the kernel's fixed ramp and tail (``KERNEL_RAMP_NS``), both measured on
  the calibration case's kernel (kernels/zscore_features, benchmarks/waves/strips.cu).
* *fixed work per thread*: more blocks are smaller blocks, the same warps spread over more SMs.
  That helps only where SMs idle (fewer blocks than SMs), and only by what the busy SMs' warps
  wait for: the larger of the busiest scheduler's ``k / P(k)`` before and after
  (estimate.block_increase: issue contention) and the busy SMs' L1 and issue queues
  (analysis/spread.py, measured by benchmarks/saturation/spread.cu). Why no "idle SMs" floor:
  each busy SM already overlaps its warps, so its work does not speed up by ``sm_count / blocks``
  unless a unit of its own is near its peak. A grid with a work loop gets the smaller blocks
  instead of strips where they gain more (where the code outside the loop, run again by every
  strip, eats the strips' gain).

No gain when the grid already fills the device (one wave or more): more blocks add waves, not
resident warps (benchmarks/waves measures both on the H100).
"""

from __future__ import annotations

import math

from ..context import kernel_fact
from ..estimate import block_increase
from ..model import Fix
from ..spread import kernel_spread_gain
from ..waves import full_wave_issue_speedup, full_wave_memory_bound, grid_stride_loops, grown, waves
from ..worksplit import work_loops
from .base import ChangeKind, Estimator, Match, Optimizer
from .shared import block_size_fix


@kernel_fact
def kernel_waves(ctx):
    """The launch's waves (a fact of the kernel); None without a launch."""
    L = ctx.launch
    return None if L is None else waves(ctx.device, L, registers=ctx.entry.registers or L.registers,
                                        static_shared=max(ctx.entry.shared_static, L.static_shared))


def iterations_per_warp(ctx, loops, w) -> float | None:
    """Mean trip count of the grid-stride loop per warp, from the executed counts of its updates'
    basic blocks (ncu's per-PC counts; every instruction of a block runs as often, and only sampled
    PCs reach the context), summed over the loop's versions (a warp runs one of them); None where
    the profile has no counts."""
    total = 0
    for g in loops:
        block = next((b for b in ctx.entry.blocks if b.start <= g.update < b.end), None)
        offsets = block.instructions if block is not None else (g.update,)
        total += max((pc.executed for o in offsets if (pc := ctx.pcs.get(o)) is not None and pc.executed),
                     default=0)
    warps = w.blocks * w.warps_per_block * max(1, len(ctx.kernel.launches))
    return total / warps if total and warps else None


def kernel_duration_ns(ctx) -> float | None:
    """The kernel's mean launch duration as profiled (None when the bundle has none)."""
    got = [l.duration_ns for l in ctx.kernel.launches if l.duration_ns]
    if got:
        return sum(got) / len(got)
    t = ctx.kernel.throughput
    return t.duration_ns if t is not None and t.duration_ns else None


def loop_samples(ctx, g) -> int:
    """Samples on the instructions of the loop whose header is ``g.header``."""
    at = ctx.total_at
    lp = ctx.loop_by_header(ctx.entry.name, g.header)
    body = lp.instructions if lp is not None else ()
    return sum(at.get(ctx.entry.instructions[i].offset, 0) for i in body)


# "nearly all of the kernel's samples": the loop must hold most of them, or cutting it is not what
# the kernel's time is about (the estimate's Amdahl term prices the rest)
WORK_LOOP_SHARE = 0.5
# What a work loop cut into strips reaches on the H100 (benchmarks/waves/strips.cu, the calibration
# case's kernel at 1024/4096/16384 rows, 1 strip to 4 waves, under ncu): a long run of strips moves
# DRAM at up to 70% of peak (67.2 / 68.9 / 69.8% at 107-111 us; the memory-parallelism curve's 72%
# at 64 warps x 128 B in flight), and every kernel loses a fixed few microseconds to its ramp and
# tail: the bytes of each full-wave run fit `bytes / 70% + 4.4-6.3 us` (9, 27, 111 us runs). The
# curve's 85% top is for long streams with more bytes in flight per warp than a strip keeps.
# tests/analysis/test_worksplit.py reads both back from the measurements.
STRIPS_DRAM_PCT = 70.0
KERNEL_RAMP_NS = 5300.0


def with_ramp(ctx, gain: float) -> float:
    """``gain`` once the grown kernel's fixed ramp and tail are paid: a kernel of today's duration
    ``now`` scaled by ``1 / gain`` still takes ``KERNEL_RAMP_NS`` more (the work it spreads is the
    part that scales; the ramp of the first wave and the tail of the last do not). The same for a
    grid-stride loop grown to a full wave as for a work loop cut into strips: both are one wave of
    more, shorter-lived warps (at least 1)."""
    now = kernel_duration_ns(ctx)
    if now and gain > 1.0:
        gain = now / (now / gain + KERNEL_RAMP_NS)
    return max(1.0, gain)


def work_split(ctx, w) -> dict | None:
    """The work loop to cut into strips and how many strips (see the module docstring), or None."""
    if not ctx.total or w.capacity // max(1, w.blocks) < 2:
        return None     # no two strips fit in a wave, whatever the loop: the loop analysis is not needed
    loops = work_loops(ctx.entry)
    if not loops:
        return None
    share = sum(loop_samples(ctx, g) for g in loops) / ctx.total
    if share <= WORK_LOOP_SHARE:
        return None
    strips = w.capacity // max(1, w.blocks)       # whole strips within one wave
    t = iterations_per_warp(ctx, loops, w)
    if t is not None:
        strips = min(strips, int(t))               # a strip needs at least one pass of the loop
    if strips < 2:
        return None
    return {"work_loop": hottest(ctx, loops), "strips": strips, "loop_share": share, "iterations": t}


def hottest(ctx, loops):
    """The loop version with the most samples: the one the advice names."""
    return max(loops, key=lambda g: loop_samples(ctx, g))


class BlockIncrease(Optimizer):
    id = "block_increase"
    title = "Block Increase"
    kind = ChangeKind.parallel
    method = Estimator.parallel
    suggestion = ("The grid has fewer blocks than the GPU has SMs. Launch more, smaller blocks (or split the "
                  "work of a block) so that every SM has work.")

    def match(self, ctx) -> Match | None:
        L, w = ctx.launch, kernel_waves(ctx)
        if L is None or w is None or ctx.occupancy is None or w.fills_device:
            return None
        loops = grid_stride_loops(ctx.entry)
        if loops:
            stride = hottest(ctx, loops)
            data = {"blocks": L.blocks, "waves": w.waves, "full_wave": w.capacity, "grid_stride": stride}
            t = iterations_per_warp(ctx, loops, w)
            if t is not None:
                if t <= 1.0:
                    return None     # every warp runs the loop once: no work left for more blocks
                data["iterations"] = t
            return Match((), float(ctx.total), float(ctx.latency), data=data)
        split = work_split(ctx, w)
        spreads = L.blocks < ctx.device.sm_count and L.threads_per_block > 128
        if split is not None:
            data = {"blocks": L.blocks, "waves": w.waves, "full_wave": w.capacity, **split}
            # the advice is the mechanism that gains more: cutting the loop, or smaller blocks
            if not spreads or self._split_gain(ctx, data) >= self._spread_gain(ctx):
                return Match((), float(ctx.total), float(ctx.latency), data=data)
        if not spreads:
            return None
        return Match((), float(ctx.total), float(ctx.latency), data={"blocks": L.blocks, "waves": w.waves})

    def estimate(self, ctx, match: Match) -> float:
        w = kernel_waves(ctx)
        p = ctx.active / ctx.total if ctx.total else 0.0
        if "grid_stride" in match.data:
            t = match.data.get("iterations")
            # the loop has work for t x today's warps: no more blocks than that get any
            target = grown(w, w.capacity if t is None else int(t * w.blocks))
            gain = min(full_wave_issue_speedup(w, target, p, ctx.device.schedulers_per_sm),
                       full_wave_memory_bound(ctx, w, target))
            return with_ramp(ctx, gain)
        if "work_loop" in match.data:
            return self._split_gain(ctx, match.data)
        return self._spread_gain(ctx)

    def _split_gain(self, ctx, data: dict) -> float:
        """A work loop cut into ``data["strips"]`` strips (see the module docstring)."""
        w = kernel_waves(ctx)
        p = ctx.active / ctx.total if ctx.total else 0.0
        s, f = data["strips"], data["loop_share"]
        target = grown(w, s * w.blocks)
        t = ctx.kernel.throughput
        dram = t.pct("dram") if t is not None else None
        gain = min(full_wave_issue_speedup(w, target, p, ctx.device.schedulers_per_sm),
                   full_wave_memory_bound(ctx, w, target),
                   STRIPS_DRAM_PCT / dram if dram else math.inf)
        # the loop's work is spread over s x the warps; what runs outside it, once per strip
        gain = gain / (f + (1.0 - f) * s)
        return with_ramp(ctx, gain)

    def _spread_gain(self, ctx) -> float:
        """Fixed work per thread, the same warps on every SM: the busy SMs' queues where the profile
        has unit throughput (analysis/spread.py), else the busiest scheduler's ``k / P(k)``
        (estimate.block_increase); the larger, as each prices a wait the other leaves out."""
        occ, L = ctx.occupancy, ctx.launch
        p = ctx.active / ctx.total if ctx.total else 0.0
        shares = {c: ctx.share(c) for c in ("memory_throttle", "not_selected", "pipe_busy")}
        total_warps = L.blocks * occ.warps_per_block
        issue = block_increase(occ.active_warps, p, shares, schedulers=ctx.device.schedulers_per_sm,
                               total_warps=total_warps, sm_count=ctx.device.sm_count)
        queues = kernel_spread_gain(ctx)
        return max(issue, queues) if queues is not None else issue

    def describe(self, ctx, match: Match) -> str:
        if "work_loop" in match.data:
            return self._describe_split(ctx, match)
        if "grid_stride" not in match.data:
            return self.suggestion
        w = kernel_waves(ctx)
        line = match.data["grid_stride"].line
        where = f"the grid-stride loop at line {line}" if line else "the grid-stride loop"
        text = (f"The grid is {w.waves:.2f} of a wave: {w.blocks} blocks where {w.sm_count} SMs hold {w.resident} "
                f"each ({w.limiter} limit), {w.capacity} in a full wave. {where.capitalize()} shares the work "
                f"among any grid, so launch {w.capacity} blocks (SMs x resident blocks per SM): more warps for "
                f"the same work.")
        t = match.data.get("iterations")
        if t is not None:
            text += f" The loop runs {t:.1f} iterations per warp: at most {int(t * w.blocks)} blocks get work."
        else:
            text += " Blocks beyond the loop's item count get no work."
        return text

    def _describe_split(self, ctx, match: Match) -> str:
        w, L = kernel_waves(ctx), ctx.launch
        s, f, t = match.data["strips"], match.data["loop_share"], match.data.get("iterations")
        line = match.data["work_loop"].line
        where = f"the loop at line {line}" if line else "the kernel's outer loop"
        dim = "blockIdx.y" if L.grid[1] == 1 and L.grid[2] == 1 else "blockIdx.z" if L.grid[2] == 1 else \
            "a new grid index"
        blocks = s * w.blocks
        fill = "one full wave" if blocks >= 0.95 * w.capacity else f"{blocks / w.capacity:.2f} of a wave"
        text = (f"The grid is {w.waves:.2f} of a wave: {w.blocks} blocks where {w.sm_count} SMs hold {w.resident} "
                f"each ({w.limiter} limit), {w.capacity} in a full wave. {where.capitalize()} holds {f:.0%} of the "
                f"samples; every thread runs it the same number of times (its trip count comes from neither the "
                f"thread's index nor memory) and nothing but its counter and addresses goes from one iteration to "
                f"the next. Cut its range into {s} strips, one per {dim} (launch {s} x the grid: {blocks} blocks, "
                f"{fill}), each thread running its own strip: more warps for the same work. Check that no "
                f"iteration reads what an earlier one wrote.")
        if t is not None:
            text += f" The loop runs {t:.1f} passes per warp."
        return text

    def source_place(self, ctx, match: Match) -> tuple[str, int] | None:
        g = match.data.get("work_loop")
        lp = ctx.loop_by_header(ctx.entry.name, g.header) if g is not None else None
        return (lp.file, lp.line) if lp is not None and lp.file and lp.line else None

    def fix(self, ctx, match: Match) -> Fix | None:
        if "grid_stride" in match.data or "work_loop" in match.data:
            return None     # the grid is computed at the launch site: no single edit to offer
        return block_size_fix(ctx, smaller=True)

