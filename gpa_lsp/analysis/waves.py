"""Waves: how much of the GPU a launch's grid fills, and whether more blocks would mean more warps.

A GPU runs a grid in *waves*: every SM holds as many blocks as its resources allow (``resident``,
from the occupancy limits: threads, registers, shared memory, the blocks-per-SM cap), so one wave
is ``SMs x resident`` blocks and a grid is ``blocks / (SMs x resident)`` waves. A grid of less
than one wave leaves warp slots empty (and, with fewer blocks than SMs, whole SMs idle); the last
wave of a longer grid may be partly full (``tail_fill``). A grid of one wave or more already fills
every SM: more blocks cannot add resident warps, only more waves (benchmarks/waves measures it:
the time of a fixed-work kernel steps at each wave boundary and is flat within a wave).

What more blocks do depends on how the kernel divides its work:

* *fixed work per thread* (each thread owns one item, the grid is sized from the problem): more
  blocks for the same work means smaller blocks -- the same warps spread over more SMs. That
  helps only where SMs are idle, and the busiest scheduler's ``k / P(k)`` says by how much.
* *a grid-stride loop* (``for (i = tid; i < n; i += gridDim.x * blockDim.x)``, or a block-level
  ``b += gridDim.x``): the loop shares the same work among whatever grid is launched, so more
  blocks are *more warps* doing less each -- a different mechanism. Up to one full wave, every
  SM gets the resident warps its resources allow, and the time follows the issue rate of the
  whole GPU (SMs with work x schedulers x P(k)) or the memory parallelism those warps keep in
  flight (analysis/parallelism.py), whichever binds.

The grid-stride loop is found in SASS: a loop whose induction update adds a value derived from
``gridDim`` (``c[0x0][0xc..0x14]`` on sm_70+; ``blockDim`` is ``c[0x0][0x0..0x8]``). The trip
count is a kernel argument the profile does not record, so the full wave is an upper bound on the
useful blocks: a loop with fewer items than a wave's blocks leaves the rest idle (say so in the
advice; see docs/optimizers.md "Block Increase").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpa_lsp.profile.model import Device, Launch
from gpa_lsp.sass.model import Function

from ..sass.defuse import register_defs, register_uses
from .estimate import issue_probability, warp_ready_probability
from .flow import forward_blocks, loop_scopes
from .occupancy import resident_limits
from .parallelism import attainable, curve, roof
from .probe_tables import mlp_curve_scale, mlp_name

GRID_DIM = range(0xC, 0x18)       # c[0x0][0xc..0x14]: gridDim.x/y/z (nctaid) on sm_70..sm_90
_ADDS = ("IADD3", "IADD", "IMAD", "LEA", "VIADD", "UIADD3", "UIMAD", "ULEA", "IADD32I", "UIADD32I")


@dataclass(frozen=True)
class Waves:
    blocks: int                  # blocks of the launch
    sm_count: int
    resident: int                # blocks per SM the block's resources allow
    limiter: str                 # which resource sets ``resident``
    warps_per_block: int

    @property
    def capacity(self) -> int:
        """Blocks of one full wave."""
        return self.sm_count * max(1, self.resident)

    @property
    def waves(self) -> float:
        return self.blocks / self.capacity

    @property
    def fills_device(self) -> bool:
        """Every SM holds all the blocks it can: more blocks only add waves."""
        return self.blocks >= self.capacity

    @property
    def busy_sms(self) -> int:
        return min(self.blocks, self.sm_count)

    @property
    def warps_per_busy_sm(self) -> float:
        """Resident warps on an SM that has work, averaged over those SMs (first wave)."""
        per_sm = min(self.blocks, self.capacity) / max(1, self.busy_sms)
        return per_sm * self.warps_per_block

    @property
    def full_warps(self) -> int:
        """Resident warps per SM in a full wave."""
        return max(1, self.resident) * self.warps_per_block

    @property
    def tail_fill(self) -> float:
        """How full the last wave is (1.0: whole waves)."""
        rest = self.blocks % self.capacity
        return rest / self.capacity if rest else 1.0


def waves(device: Device, launch: Launch, *, registers: int, static_shared: int = 0) -> Waves:
    limits = resident_limits(device, launch, registers=registers, static_shared=static_shared)
    limiter = min(limits, key=lambda k: limits[k])
    return Waves(launch.blocks, max(1, device.sm_count), int(max(0, limits[limiter])), limiter,
                 math.ceil(max(1, launch.threads_per_block) / 32))


@dataclass(frozen=True)
class GridStride:
    header: int                  # offset of the loop's header block
    update: int                  # offset of the induction update that adds the gridDim stride
    line: int | None             # the loop's source line


def _transfer(ins, derived: set[str]) -> None:
    """Registers derived from ``gridDim`` after ``ins``: arithmetic on a derived value (or a
    ``gridDim`` constant) derives its results; a load's value is data, and any other def kills
    (a guarded one may not execute, so it leaves the register as it was)."""
    data_load = ins.memory is not None and ins.memory.load and ins.memory.space != "constant"
    dsts = {r for r in register_defs(ins) if not r.startswith(("P", "UP"))}
    if not data_load and (any(bank == 0 and off in GRID_DIM for bank, off in ins.cbank)
                          or register_uses(ins) & derived):
        derived |= dsts
    elif not ins.predicate:
        derived -= dsts


def _derived_before(function: Function) -> dict[int, frozenset[str]]:
    """Per instruction index: the registers that may hold a ``gridDim``-derived value on entry
    (forward may-analysis over the CFG, union at joins)."""
    ins_list = function.instructions
    pos, blocks, preds = forward_blocks(function)
    out: dict[int, frozenset[str]] = {b.start: frozenset() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in blocks:
            cur: set[str] = set().union(*(out.get(p, frozenset()) for p in preds[b.start]))
            for off in b.instructions:
                _transfer(ins_list[pos[off]], cur)
            if frozenset(cur) != out[b.start]:
                out[b.start] = frozenset(cur)
                changed = True
    before: dict[int, frozenset[str]] = {}
    for b in blocks:
        cur = set().union(*(out.get(p, frozenset()) for p in preds[b.start]))
        for off in b.instructions:
            before[pos[off]] = frozenset(cur)
            _transfer(ins_list[pos[off]], cur)
    return before


def _loop_carried(function: Function, lp, reg: str) -> bool:
    """``reg`` is read in the loop before the loop writes it (walking the body in layout order
    from the header): its value comes around the back edge, as an induction variable's does."""
    header = next((i for i in lp.instructions if function.instructions[i].offset == lp.header_offset),
                  min(lp.instructions))
    order = sorted(lp.instructions, key=lambda i: (i < header, i))
    for i in order:
        ins = function.instructions[i]
        if reg in register_uses(ins):
            return True
        if reg in register_defs(ins) and not ins.predicate:
            return False
    return False


def grid_stride_loops(function: Function) -> tuple[GridStride, ...]:
    """The outermost loops whose induction variable advances by a value derived from ``gridDim``:
    an add inside the loop that writes a register it also reads (``R0 = R7 + R0``) with another
    source derived from ``gridDim`` where it executes. More than one when nvcc versions the loop
    (particle_blocks: one copy for an empty inner loop, one for the rest); a grid-stride loop
    inside another is left out (its iterations are the outer one's work split further)."""
    if not any(bank == 0 and off in GRID_DIM for ins in function.instructions for bank, off in ins.cbank):
        return ()
    before = _derived_before(function)
    found: dict[int, GridStride] = {}
    scopes = sorted(loop_scopes(function), key=lambda lp: (lp.depth, lp.header_offset))
    parent = {lp.header_offset: lp.parent for lp in scopes}
    for lp in scopes:
        up = lp.parent
        while up is not None and up not in found:
            up = parent.get(up)
        if up is not None:
            continue
        for i in sorted(lp.instructions):
            ins = function.instructions[i]
            if ins.base_opcode not in _ADDS:
                continue
            uses = register_uses(ins)
            induction = {r for r in register_defs(ins) & uses if _loop_carried(function, lp, r)}
            if induction and (uses - induction) & before.get(i, frozenset()):
                found[lp.header_offset] = GridStride(lp.header_offset, ins.offset, lp.line)
                break
    return tuple(sorted(found.values(), key=lambda g: g.header))


def grid_stride_loop(function: Function) -> GridStride | None:
    """The first of ``grid_stride_loops`` in layout order (None: the kernel has none)."""
    loops = grid_stride_loops(function)
    return loops[0] if loops else None


def grown(w: Waves, blocks: int) -> Waves:
    """The same launch with ``blocks`` blocks (never fewer than it has, never more than a wave)."""
    return replace(w, blocks=max(w.blocks, min(blocks, w.capacity)))


def full_wave_issue_speedup(now: Waves, target: Waves, issued_ratio: float, schedulers: int) -> float:
    """More warps for the same work (a grid-stride kernel grown to ``target``), by issue rate.

    The work is the kernel's instructions, fixed; the GPU issues them at ``SMs with work x
    schedulers with warps x P(k)`` per cycle, ``k`` warps per scheduler (``P`` from the measured
    issue rate ``issued_ratio`` at today's ``k``, Eq. 8/9). A scheduler with no warp issues
    nothing, so with fewer warps than schedulers only that many schedulers count."""
    p = min(max(issued_ratio, 0.0), 1.0)
    if p <= 0:
        return 1.0

    def rate(w: Waves) -> tuple[float, float]:
        warps = w.warps_per_busy_sm
        active = min(float(schedulers), max(warps, 1e-9))
        return w.busy_sms * active, warps / active     # (busy schedulers, warps per busy scheduler)

    s_now, k_now = rate(now)
    s_new, k_new = rate(target)
    q = warp_ready_probability(p, k_now)
    a, b = s_now * issue_probability(q, max(k_now, 1.0)), s_new * issue_probability(q, max(k_new, 1.0))
    if a <= 0 or b <= 0:
        return 1.0
    return max(1.0, b / a)


def full_wave_memory_bound(ctx, now: Waves, target: Waves) -> float:
    """The most ``target`` can gain when the kernel's DRAM traffic stays as it is: the bandwidth
    its loads in flight can pull (Little's law, the measured curve of analysis/parallelism.py)
    over the DRAM share measured now. The curve was measured with every SM busy, so a grid that
    leaves SMs idle counts as its total bytes in flight spread over all SMs. Where the measured
    share is above what the counted loads reach, more loads are in flight than counted (across
    iterations) and the target's count is scaled alike. inf without a roof (no DRAM measurement,
    no loop with global loads, an unmeasured device)."""
    r = roof(ctx)
    if r is None or r.dram_pct <= 0:
        return math.inf
    points = curve(mlp_name(ctx.device), r.pattern)

    def inflight(w: Waves) -> float:
        return r.warp_bytes * w.warps_per_busy_sm * w.busy_sms / w.sm_count

    scale = mlp_curve_scale(ctx)         # a borrowed curve: its bytes per second on this device's memory
    a = attainable(points, inflight(now))
    if not a:
        return math.inf
    a *= scale
    b = attainable(points, max(1.0, r.dram_pct / a) * inflight(target))
    return max(1.0, b * scale / r.dram_pct) if b else math.inf
