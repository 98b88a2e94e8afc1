"""Per-lane walks over rows of different lengths: what coalescing them can gain, from the probes
``benchmarks/coalescing/lanewalk_probe.cu`` (rows of one length) and ``lanewalk_spread_probe.cu``
(rows of lengths uniform in [1, 2L - 1]), measured on the H100 (table: ``gpa_lsp/data/
coalescing.json``, ``lanewalk`` and ``lanewalk_spread``).

*A per-lane walk*: a thread walks its own row (``for (j = row_ptr[r]; j < row_ptr[r + 1]; ++j)``):
in a loop, global loads that are not gathers and move at least twice their ideal sectors, grouped by
the array they walk (the kernel parameters their address comes from, followed through the
arithmetic of the SASS). The profile's per-instruction counts give, over the walk's loads:

* ``elements_per_lane`` L: thread-executed loads / (threads x arrays), the elements a thread walks
  in each array (the row length);
* ``lanes_active`` u: thread-executed / (32 x warp-executed), the share of a warp's lanes still
  walking at each of its steps. Rows of one length give u = 1; rows of different lengths leave the
  lanes of the shorter rows idle while the warp runs its longest row.

*What the probes measured.* The unit model (``analysis/coalescing.py``) prices coalescing as the
work the excess sectors load on the L1, the L2 and DRAM; with rows of one length the column-major
walk (the same threads, every request coalesced) gains what it says (``lanewalk``: 1.5-3.1x at
16-128 elements per row). With rows of different lengths (``lanewalk_spread``, u ~ 0.52) neither
rewrite recovers the idle lanes:

* the column-major (ELL/SELL-like) walk reads, in every request, the slots of the rows that have
  ended with those still running: DRAM read 2.0-3.4x the ideal bytes, at 75-82% of its peak, and
  the walk took 1.05-2.1x *longer* than the scalar one;
* a warp per row (CSR vector) idles the lanes past each row's end (ceil(n / 32) steps of 32 lanes
  for n elements) and adds a reduction per row: 0.28-1.28x of the scalar walk, the better end only
  at 64 warps per SM and 32 elements per row.

So the most a per-lane walk with idle lanes gains from coalescing is the better of the two
rewrites on the spread probe (``spread_gain``: the probe's scalar time over its faster rewrite, at
the kernel's row length, gather or not, and resident warps), not what the unit model says. The
probe measured only the two ends of the lane activity (u ~ 0.52 and u = 1) and rows of 16 and 32
elements; in between the cap is an assumption, stated here: it fades out, ``gain / ((1 - t_u) (1 -
t_L))``, as u rises from the probe's to 1 (``t_u``) and as the rows grow from 32 to 128 elements
(``t_L`` on log2 L; at 128 the row-of-one-length probe found a warp per row as fast as the
column-major walk), flat below the probe's u and below 16 elements (no extrapolation).

What helps such a walk is to make the rows of a warp alike first (sort or bin the rows by length,
SELL-C-sigma), then coalesce; the advice says so (``describe``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ..sass.operands import address_registers, constant_operands, memory_operand
from .coalescing import busy_sms, ideal_sectors, remappable_excess
from .context import KernelContext, kernel_fact
from .gathers import gathers
from .probe_tables import coalescing_devices, coalescing_name

WALK_EXCESS = 0.5        # a walk load moves at least twice its ideal sectors (1 - ideal/actual)
LONG_ROWS = 128          # elements per row at which a warp per row matched the column-major walk (lanewalk)
# the share of the SM's L1/shared capacity (``Device.shared_memory_per_sm``) the resident warps' rows may
# take and still stay in the L1 between two walks (the rest: other lines, the L1's own sets)
ROW_FITS = 0.5
REWALK = 0.5             # a loop over a walked array moving this share of its largest loop's bytes walks it again
_DESC = re.compile(r"^desc\[[^\]]*\]")


@dataclass(frozen=True)
class Walk:
    loads: tuple[int, ...]         # offsets of the walk's loads (uncoalesced, not gathers)
    arrays: int                    # arrays walked (distinct kernel-parameter roots of their addresses)
    elements_per_lane: float       # L: elements a thread walks in each array
    lanes_active: float            # u: share of a warp's lanes walking at each of its steps
    gather: bool                   # a gather in the walk's loops (x[col[j]])
    row_bytes: float = 0.0         # bytes a thread loads in its walk, all its arrays, every walk of them


def _param_roots(function) -> dict[int, frozenset[int]]:
    """Global access offset -> the constant-bank offsets (kernel parameters) its address comes from,
    in one pass in layout order; a value a global (or local, shared) load returned has none."""
    roots: dict[str, frozenset[int]] = {}
    out: dict[int, frozenset[int]] = {}
    empty: frozenset[int] = frozenset()
    for ins in function.instructions:
        mem = ins.memory
        consts = frozenset(off for bank, off in constant_operands(ins.operands) if bank == 0 and off is not None)
        if mem is not None and mem.space in ("global", "generic"):
            regs = address_registers(_DESC.sub("", memory_operand(ins.operands) or ""))
            out[ins.offset] = empty.union(*(roots.get(r, empty) for r in regs))
        if mem is not None and mem.load and mem.space != "constant":
            for r in ins.dsts:
                roots[r] = empty
            continue
        came = empty.union(*(roots.get(r, empty) for r in ins.srcs)) | consts
        for r in ins.dsts:
            roots[r] = came
    return out


@kernel_fact
def walk(ctx: KernelContext) -> Walk | None:
    """The kernel's per-lane walk, or None (no uncoalesced non-gather loads in a loop, or no
    thread-executed counts: the ncu collector records them, the CUPTI one does not)."""
    first = ctx.entry.instructions[0].offset if ctx.entry.instructions else None
    head = ctx.pcs.get(first) if first is not None else None
    threads = head.thread_executed if head is not None else None
    if not threads:
        return None
    g = gathers(ctx)
    roots = _param_roots(ctx.entry)
    cands = []
    for o, p in ctx.pcs.items():
        site = ctx.site(o)
        if site is None or o in g or not p.sectors or not p.executed or not p.thread_executed:
            continue
        mem = site.instruction.memory
        if mem is None or not mem.load or mem.atomic or mem.space not in ("global", "generic"):
            continue
        if remappable_excess(ctx, o) < WALK_EXCESS or not roots.get(o):
            continue
        cands.append((o, p, ctx.loop_of(o)))
    arrays = {roots[o] for o, _, lp in cands if lp is not None}
    loads = [(o, p) for o, p, _ in cands if roots[o] in arrays]
    if not loads:
        return None
    headers = {lp.header_offset for o, _, lp in cands if lp is not None and roots[o] in arrays}
    thr = sum(p.thread_executed for _, p in loads)
    exe = sum(p.executed for _, p in loads)
    gather = any((lp := ctx.loop_of(o)) is not None and lp.header_offset in headers for o in g)
    loaded = sum(p.thread_executed * ctx.site(o).instruction.memory.width / 8 for o, p in loads)
    return Walk(tuple(sorted(o for o, _ in loads)), len(arrays), thr / (threads * len(arrays)),
                min(1.0, thr / (32.0 * exe)), gather, loaded / threads)


@kernel_fact
def _walked_again(ctx: KernelContext) -> tuple[float, float]:
    """(ideal bytes of the walk's loads in all, those that walk an array a thread already walked in
    an earlier loop), summed over the profiled launches: for each array the walk reads in two or more
    loops, every loop's but the largest one's. A loop that moves less than ``REWALK`` of the largest's
    bytes is nvcc's remainder of an unrolled walk (conv1d_taps: 8 of 264 taps), which continues it."""
    w = walk(ctx)
    if w is None:
        return 0.0, 0.0
    roots = _param_roots(ctx.entry)
    per: dict[frozenset[int], dict[int, float]] = {}
    for o in w.loads:
        lp, ideal = ctx.loop_of(o), ideal_sectors(ctx, o)
        if lp is None or ideal is None:
            continue
        loops = per.setdefault(roots.get(o, frozenset()), {})
        loops[lp.header_offset] = loops.get(lp.header_offset, 0.0) + ideal * 32.0
    total = sum(sum(v.values()) for v in per.values())
    again = sum(sum(b for b in v.values() if b >= REWALK * max(v.values())) - max(v.values()) for v in per.values())
    return total, again


def fetched_row_bytes(ctx: KernelContext) -> float:
    """The bytes a warp per row fetches for its row: the walk's ``row_bytes`` less what it walks again
    (a second walk of the row hits the L1); 0.0 without a walk."""
    w = walk(ctx)
    if w is None:
        return 0.0
    total, again = _walked_again(ctx)
    return w.row_bytes * (total - again) / total if total > 0 else w.row_bytes


@kernel_fact
def rewalked_bytes(ctx: KernelContext) -> float:
    """Bytes per launch (ideal sectors) of the walk's loads that walk again an array a thread already
    walked (``_walked_again``: a row reduced, then walked again to scale it). A warp per row keeps its
    row in the L1 between the walks when the resident warps' rows fit it (``ROW_FITS``), so those
    bytes reach no further; a thread per row's 32 rows do not stay (the original reads them again).
    0.0 without a walk of ``LONG_ROWS`` elements or more, or when the rows do not fit."""
    w = walk(ctx)
    if w is None or w.elements_per_lane < LONG_ROWS:
        return 0.0
    total, again = _walked_again(ctx)
    if again <= 0 or total <= 0:
        return 0.0
    occ = ctx.occupancy
    warps = occ.active_warps if occ is not None and occ.active_warps > 0 else ctx.device.warps_per_sm
    if warps * fetched_row_bytes(ctx) > ROW_FITS * ctx.device.shared_memory_per_sm:
        return 0.0
    return again / max(1, len(ctx.kernel.launches))


@lru_cache(maxsize=None)
def _spread(name: str) -> tuple[dict, ...]:
    return tuple(coalescing_devices().get(name, {}).get("lanewalk_spread") or ())


def spread_gain(name: str, elements: float, gather: bool, warps: float) -> tuple[float, float, float] | None:
    """(at ``warps`` per SM, least, most over the probe's warps): the spread probe's scalar time over
    its faster rewrite (column-major or warp per row) at ``elements`` per row, log2-interpolated
    between its lengths and linearly between its warps per SM, flat beyond them; None without a table."""
    rows = [r for r in _spread(name) if r["gather"] == gather and r["median_ms"]]
    if not rows:
        return None
    t = {(r["mode"], r["elements_per_row"], r["warps_per_sm"]): r["median_ms"] for r in rows}
    lengths = sorted({k[1] for k in t})
    wlist = sorted({k[2] for k in t})

    def best(L: int, w: int) -> float:
        return t[("scalar", L, w)] / min(t[("ell", L, w)], t[("vector", L, w)])

    def interp(xs: list, x: float, f) -> float:
        if x <= xs[0]:
            return f(xs[0])
        for a, b in zip(xs, xs[1:]):
            if x <= b:
                return f(a) + (f(b) - f(a)) * (x - a) / (b - a)
        return f(xs[-1])

    def at_length(w: int) -> float:
        lx = [math.log2(L) for L in lengths]
        return interp(lx, math.log2(max(elements, 1.0)), lambda x: best(lengths[lx.index(x)], w))

    per_w = {w: at_length(w) for w in wlist}
    return interp(wlist, warps, per_w.__getitem__), min(per_w.values()), max(per_w.values())


def spread_lanes(name: str) -> float | None:
    """The share of lanes the spread probe's scalar walk kept active (its rows' spread)."""
    rows = _spread(name)
    vals = [r["lanes_active"] for r in rows if r.get("lanes_active")]
    return max(vals) if vals else None


@dataclass(frozen=True)
class Cap:
    point: float      # the most coalescing this walk can gain, at the kernel's warps per SM
    low: float        # least and most over the probe's warps per SM
    high: float
    walk: Walk
    measured: tuple[float, float]    # (least, most) the probe's better rewrite gained, before the fade


@kernel_fact
def idle_lane_cap(ctx: KernelContext) -> Cap | None:
    """What coalescing a per-lane walk whose lanes idle can gain at most (see the module's
    docstring), or None: no walk, rows of one length (u = 1), rows long enough (>= LONG_ROWS), or
    no spread table for the device or its chip."""
    w = walk(ctx)
    probed = coalescing_name(ctx.device, "lanewalk_spread")     # the device whose spread probe applies
    u_probe = spread_lanes(probed)
    if w is None or u_probe is None or w.lanes_active >= 1.0 or w.elements_per_lane >= LONG_ROWS:
        return None
    warps = ctx.occupancy.active_warps if ctx.occupancy is not None else 64.0
    got = spread_gain(probed, w.elements_per_lane, w.gather, warps)
    if got is None:
        return None
    probe_long = max(r["elements_per_row"] for r in _spread(probed))
    t_u = max(0.0, (w.lanes_active - u_probe) / (1.0 - u_probe))
    t_l = max(0.0, math.log2(w.elements_per_lane / probe_long) / math.log2(LONG_ROWS / probe_long)) \
        if w.elements_per_lane > probe_long else 0.0
    fade = (1.0 - t_u) * (1.0 - t_l)
    if fade <= 0.0:
        return None
    return Cap(got[0] / fade, got[1] / fade, got[2] / fade, w, (got[1], got[2]))


@kernel_fact
def rewrite_spread(ctx: KernelContext) -> float:
    """The busy SMs before over after a warp-per-row rewrite of the kernel's per-lane walk (1: no
    walk, rows shorter than ``LONG_ROWS``, or a grid on every SM already).

    Why: a walk of rows of ``LONG_ROWS`` elements or more is coalesced by a warp per row as well as
    by storing the rows interleaved (``lanewalk``: at 128 elements the two matched), and a warp per
    row is 32 times the threads: a grid of fewer blocks than SMs then fills more of them, and each
    busy SM keeps that share of the L1's and the issue's work (benchmarks/saturation/spread.cu: the
    work of SMs whose L1 is at its roof spreads over the SMs added, 1.76x of 2.06x at 64 -> 132)."""
    w = walk(ctx)
    L = ctx.launch
    sms = ctx.device.sm_count or 1
    if w is None or w.elements_per_lane < LONG_ROWS or L is None or not L.blocks:
        return 1.0
    now = busy_sms(ctx)
    return 1.0 if now >= sms else now / busy_sms(ctx, 32 * L.blocks)
