"""What coalescing a kernel's global accesses saves, unit by unit: the per-unit roof model of
Global Memory Coalescing, grounded on the device by ``benchmarks/coalescing`` (table:
``gpa_lsp/data/coalescing.json``).

Why a model of units and not only of samples: GPA prices coalescing by the stalls it matches
(Eq. 2), as if every matched stall vanished. On Hopper an uncoalesced kernel is usually limited by
a unit's throughput (the L1 at 90-99% of its peak, or the L2), and the stalls only say that warps
queue for it. What the fix removes is that unit's *work*, and the new time is at least what every
unit still has to do at the share of its peak it can reach. So:

* **Work left per unit** (``keep``), from the sectors and ideal sectors of every global access:

  - L1: the probe shows the L1's busy time per warp request is one SM cycle per 128-byte line it
    touches (``l1tex__data_pipe_lsu_wavefronts`` = lines: 1, 4, 8, 16, 32), whatever its sectors;
    a 1-sector broadcast costs one line, 32 sectors in 32 lines cost 27-32 times a coalesced
    request. The profile has sectors, not lines: a request of ``s`` sectors touches between
    ``s / 4`` and ``s`` lines. The kernel's own L1 throughput places it: its busy cycles, at the
    probe's cycles per line, are the lines it really touched (plus shared-memory wavefronts), so
    one fraction ``alpha`` between the two is taken for all its accesses. Coalesced, a request
    touches ``max(1, ideal / 4)`` lines.
  - L2: its measured busy time is of two kinds (``DeviceTable.l2_kept``): fills, what DRAM reads
    (the probe: the same loads from DRAM cost the L2 2.8x what they cost from an L2-resident
    region, 5.9 ps more per sector DRAM reads), and requests from the L1, which coalescing cuts as
    the sectors requested (loads by sectors, the ideal ones when coalesced; stores are written
    through the L1 and cost the L2 by the lines they touch: 8 lines 3.6x one line, 32 lines 14x).
    The fills stay with the DRAM reads. Not every requested sector reaches the L2: a per-lane walk
    (a thread walks its own row, ``lanewalk_probe``) reuses each sector from L1 over its next
    steps, so the L2 sees the same sectors as the coalesced walk (8.7M both, at 8-32 warps per
    SM) and coalescing unloads the L1 (95% of its peak -> 9%), not the L2; only when the walk's
    lines overflow the L1 (64 warps per SM) do the L2 (1.2x the sectors) and DRAM (1.6x the bytes)
    see excess.
  - Gathers (``x[col[j]]``: the address comes from a value loaded in the same iteration) keep
    their sectors: no mapping of threads to data coalesces them (the probe's column-major walk
    keeps its gather at 31 sectors per request; found in the SASS by ``analysis/gathers.py``).
  - DRAM: unchanged, unless the kernel moved more DRAM bytes than its ideal sectors hold (sectors
    fetched and never used: the probe's ``stride8``, 8x the bytes); then at most the ideal bytes.
  - SM pipes and issue: unchanged (the same instructions).

* **Bound**: the new time is at least ``max_u(U_u * keep_u / roof_u)`` of the old, where ``U_u``
  is the unit's measured share of peak and ``roof_u`` the highest share the probe reached on it
  (DRAM 93%, L2 96%, L1 97%; issue and SM pipes 100%). This replaces the generic memory-system bound
  (``Optimizer.keeps``), which cannot apply: coalescing changes every memory unit's work. A
  loop-free kernel's DRAM roof is what its coalesced loads in flight pull (``loopfree_dram_roof``:
  resident warps x DRAM bytes per warp on the loop-free probe's curve).

* **Unit estimate**: where the kernel is held by the unit whose work coalescing removes, Eq. 2
  applies to that unit's busy time: ``T' = T (1 - f_b (1 - keep_b))`` with ``f_b = U_b / roof_b``
  (its share of the time) for the unit ``b`` with the most removable time. *Held*: at least the
  share of its roof at which the probe's time followed the L1's work (its L1-bound loads of 4 to
  32 lines ran the L1 at 83-97%, 0.86-1.0 of its roof; the 1-line loads it did not bound, at
  26-51%). A unit below that overlaps its work with other waits (lavamd_unroll: gathers at 63% of
  the L1), so removing its work removes no time the bound does not already allow. The estimate is the
  larger of this and the matched-stall estimate, then bounded: matched stalls undercount a
  throughput-bound kernel (warps queue on coalesced loads too), and the unit view overcounts a
  latency-bound one. When the unit is the L1, the issue work it hid does not vanish with its
  excess: the L1's work left and the issue slots' work combine by their p-norm (``unloaded_time``,
  ``OVERLAP_P``; the overlap probe: they add when neither saturates on coalesced loads, the issue
  hides entirely under a saturated L1).

* **Busy SMs**: on a grid of fewer blocks than SMs, or of one wave unevenly spread (160 blocks on
  132 SMs: two on 28 of them), Eq. 2 and the bound read the busiest SMs' L1 and SM-pipe shares (the
  profile's average x SMs / ``busy_sms``, ``BUSY_SCALED``); a rewrite that
  multiplies the threads (a warp per row of a per-lane walk, ``lanewalk.rewrite_spread``) spreads
  the L1's and the issue's work left over the SMs it fills (``model_at``).

Calibration, validation and the figures: docs/optimizers.md ("Global Memory Coalescing").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from ..sass.opcodes import GLOBAL_WRITES, SHARED_ACCESSES
from .context import KernelContext, kernel_fact
from .curves import linear_flat
from .gathers import gathers, row_gather_roof
from .parallelism import attainable, turnaround
from .probe_tables import coalescing_devices, coalescing_name, share_scale
from .residency import ramp_ns, relaunched, resident_cost, resident_share
from .tiles import coalesced_form, tile_share
from .waves import waves

SECTORS_PER_LINE = 4
# a full-line access whose sectors are at most this many times its ideal counts as coalesced
# (a misaligned row touches one sector more per line: 5 of 4)
COALESCED_SLACK = 1.25
# an access that moves at least this many times its ideal sectors has lanes in separate sectors
# (4-byte elements 32 sectors of 4, 8-byte 32 of 8, a 16 x 16 warp shape 16 of 4): not misalignment
FAR = 4.0
UNIT_ROOF_DEFAULT = 100.0   # issue and SM pipes: no probe reaches them; their peak is the bound
# How the L1's work left after coalescing and the issue slots' work combine once the L1 no longer
# holds the kernel: the time is their p-norm (p = 1: they add, p = inf: perfect overlap). The
# overlap probe brackets it (coalesced loads with FFMAs: the shares add, p 0.95-1.09; uncoalesced
# loads with the issue near its peak: p 3.4; while the L1 saturates, the issue hides under it);
# the calibration cases' coalesced variants, measured under ncu (benchmarks/coalescing/recorded),
# sit at p = 1.97 (gaussian_blocks: L1 52% of its roof, issue 85%) and 2.34 (conv1d_taps: 91%,
# 51%), and the shares this model predicts for them at 1.75 and 2.29. docs/optimizers.md.
OVERLAP_P = 2.0


def _busy(row: dict, unit: str) -> float:
    """Seconds of the launch the unit was busy at its peak (duration x share of peak)."""
    return row["duration_ns"] * 1e-9 * row[f"{unit}_pct"] / 100.0


@dataclass(frozen=True)
class DeviceTable:
    """What the probe measured on one device, reduced to the numbers the model reads."""

    roofs: dict[str, float]                       # unit -> highest share of peak reached (%)
    held: float                                   # the least share of its roof at which a unit held the time
    l1_cycles_per_line: float                     # SM cycles of L1 busy time per line of a request
    l2_load_sector: float                         # L2 busy seconds (device) per load sector from L1
    l2_dram_sector: float                         # L2 busy seconds added by each sector DRAM moves (fills)
    l2_store: tuple[tuple[float, float], ...]     # (lines per store request, L2 busy seconds per request)
    loopfree: tuple[tuple[float, float], ...] = ()  # (DRAM bytes in flight per SM, best DRAM share %) of
                                                    # a loop-free kernel, rising (loopfree_probe)

    def l2_kept(self, busy: float, dram_reads: float, request_keep: float, dram_keep: float,
                resident: float = 0.0, requests_after: float = 0.0) -> float:
        """The L2's busy seconds after coalescing, from its ``busy`` seconds now.

        Its busy time is the fills of the sectors DRAM reads (``dram_reads``; the probe: a sector
        read from DRAM costs the L2 a fill besides its request) and the requests from the L1.
        Coalescing keeps the fills of the DRAM reads that stay (``dram_keep``) and cuts the
        requests as the sectors requested (``request_keep``), though never below a request per
        sector still read. The excess a per-lane walk's later steps reuse hits in L1 and never
        reached the L2 (lanewalk_probe: a column-major walk asks the L2 for the same sectors), so
        the requests are what the L2 measured, not the sectors requested. The share of the reads
        the L2 keeps between launches (``resident``, residency.py) is requested but not filled.

        The L2 sees what the L1 misses, before and after: the requests kept are never fewer than
        the coalesced code's own (``requests_after``: its ideal sectors at the probe's L2 cost per
        sector, per launch), up to what the L2 measured now. Scaling the measured requests by the
        sectors requested alone assumes the L1 filtered the excess and the ideal alike; where the
        L1 already absorbed the excess (a walk's later steps, loads of a struct's fields or a
        pixel's channels at one address plus a small offset, neighbouring taps), the coalesced
        code asks the L2 for as much as the original did (docs/optimizers.md, "The L2 sees what
        the L1 misses")."""
        fills = min(busy, dram_reads * self.l2_dram_sector)
        requests = busy - fills
        reads_after = dram_reads * dram_keep
        floor = max(reads_after * self.l2_load_sector, requests_after)
        return reads_after * (1.0 - resident) * self.l2_dram_sector + max(requests * request_keep, min(requests, floor))

    def l2_store_cost(self, lines: float) -> float:
        """L2 busy seconds of one store request touching ``lines`` lines (linear between the probe's)."""
        pts = self.l2_store
        if lines <= pts[0][0]:
            return pts[0][1] * lines / pts[0][0]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if lines <= x1:
                return y0 + (y1 - y0) * (lines - x0) / (x1 - x0)
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        return y1 + (y1 - y0) * (lines - x1) / (x1 - x0)


def table_name(ctx: KernelContext) -> str:
    """The device whose walk probe (the unit model's table) applies to the kernel's device."""
    return coalescing_name(ctx.device, "walk")


def borrowed_share_scale(ctx: KernelContext, probe: str) -> float:
    """What a DRAM share in ``probe``'s rows is worth on the kernel's device: 1.0 where the device
    has rows of its own, else ``borrowed_dram_scale`` from the walk probe's DRAM peak of the device
    whose rows it takes (``coalescing_name``) and the kernel's own."""
    return share_scale(ctx.device, coalescing_name(ctx.device, probe), ctx.kernel.throughput)


@lru_cache(maxsize=None)
def device_table(name: str) -> DeviceTable | None:
    """The walk probe's numbers under a device name of ``coalescing.json`` (a kernel's: ``table_name``,
    its device's own rows or its chip's), or None without them."""
    d = coalescing_devices().get(name)
    if not d or not d.get("walk"):
        return None
    walk = d["walk"]
    sms = d.get("sm_count") or 1
    roofs = {u: max(r[f"{u}_pct"] for r in walk) for u in ("l1", "l2", "dram")}
    # L1: loads of 4 to 32 lines per request from an L1-resident tile, whose time is the L1's
    l1_rows = [r for r in walk if r["foot"] == "l1" and not r["store"] and r["lines_per_request"] >= 4]
    per_line = [_busy(r, "l1") * r["clock_hz"] * sms / (r["requests"] * r["lines_per_request"]) for r in l1_rows]
    held = min(r["l1_pct"] for r in l1_rows) / roofs["l1"]
    # L2: coalesced loads from an L2-resident region at the most warps; stores by lines per request
    top = max(r["warps_per_sm"] for r in walk)
    ld = next(r for r in walk if r["config"] == "row32_ld" and r["foot"] == "l2" and r["warps_per_sm"] == top)
    # the same loads from DRAM: the L2's busy time beyond the hits, per sector DRAM moved
    fill = next(r for r in walk if r["config"] == "row32_ld" and r["foot"] == "dram" and r["warps_per_sm"] == top)
    hit = _busy(ld, "l2") / (ld["requests"] * ld["sectors_per_request"])
    per_fill = (_busy(fill, "l2") - hit * fill["requests"] * fill["sectors_per_request"]) / (fill["dram_bytes"] / 32.0)
    st = sorted((r["lines_per_request"], _busy(r, "l2") / r["requests"]) for r in walk
                if r["store"] and r["foot"] == "l2" and r["warps_per_sm"] == top)
    return DeviceTable(roofs=roofs, held=held, l1_cycles_per_line=sorted(per_line)[len(per_line) // 2],
                       l2_load_sector=hit, l2_dram_sector=max(0.0, per_fill), l2_store=tuple(st),
                       loopfree=_loopfree_curve(d.get("loopfree") or []))


def _loopfree_curve(rows: list[dict]) -> tuple[tuple[float, float], ...]:
    """(DRAM bytes in flight per SM, the best DRAM share reached with at most that many) of the
    probe's loop-free kernels (``lf_mM``, ``lfhit_mM``: each warp loads M lines from DRAM once, so
    warps per SM x M x 128 bytes are in flight), rising; the L1-hit loads of ``lfhit`` add no DRAM
    bytes and, measured, no share."""
    return loopfree_points(rows, ("lf_", "lfhit_"), lambda r: r["dram_pct"])


def loopfree_points(rows: list[dict], configs: tuple[str, ...], share) -> tuple[tuple[float, float], ...]:
    """(DRAM bytes of loads in flight per SM, the best ``share(row)`` reached with at most that many),
    rising, over the loop-free probe's rows whose config starts with one of ``configs`` (``<name>_mM``:
    warps per SM x M lines of 128 bytes in flight); rows without a DRAM share are left out."""
    best: dict[float, float] = {}
    for r in rows:
        name = r["config"]
        if not name.startswith(configs) or r.get("dram_pct") is None:
            continue
        f = r["warps_per_sm"] * int(name.rsplit("_m", 1)[1]) * 32 * 4.0
        best[f] = max(best.get(f, 0.0), share(r))
    out, top = [], 0.0
    for f in sorted(best):
        top = max(top, best[f])
        out.append((f, top))
    return tuple(out)


@dataclass(frozen=True)
class Model:
    keep: dict[str, float]        # unit -> share of its work coalescing leaves
    util: dict[str, float]        # unit -> measured share of its peak (%)
    roofs: dict[str, float]       # unit -> the share the probe reached (%)
    alpha: float                  # where the requests sit between s/4 and s lines (0..1)
    bound: float                  # the most coalescing can gain
    bound_unit: str | None        # the unit that sets it ("mlp": DRAM at a loop-free kernel's loads in flight)
    unit_estimate: float          # Eq. 2 on the busy time of the unit the excess loads (1: none held the kernel)
    unit: str | None
    extra: dict = field(default_factory=dict)
    ideal_bytes: float = 0.0      # the accesses' ideal sectors' bytes per launch (what the coalesced code moves)

    def share(self, unit: str) -> float:
        """The unit's share of the launch's time at the share of peak it can reach (0..1)."""
        return min(1.0, self.util.get(unit, 0.0) / self.roofs.get(unit, UNIT_ROOF_DEFAULT))


def misaligned_only(sectors: float, ideal: float) -> bool:
    """Whether an access's sectors per request exceed its ideal by no more than misalignment does: a
    contiguous run of lanes shifted off a line boundary touches at most one sector more per line of
    its ideal (5 of 4 for a warp of floats, 9 of 8 for doubles, 3 of 2 for halves, 2 of 1 for bytes).

    Consecutive threads already touch consecutive addresses, so no mapping of threads removes it, and
    what it costs is small: benchmarks/coalescing/misalign_probe.cu (H200, 16-64 warps per SM, 256 MiB
    streams) measured a misaligned load 1.02-1.04x slower than an aligned one and a misaligned store
    1.00-1.02x (the neighbouring warp fetches the same line: DRAM moves the same bytes), while the
    change that does remove it, a shared-memory tile loaded aligned, ran 1.04-1.14x slower than the
    misaligned taps it replaces (3-point, 9-point and 2D 5-point stencils). A 16 x 16 warp shape's
    two half-rows (6 of 4 when misaligned) are not this: 32-wide blocks do coalesce them."""
    return ideal > 0 and sectors - ideal <= math.ceil(ideal / SECTORS_PER_LINE - 1e-9) + 1e-9


def ideal_sectors(ctx: KernelContext, offset: int, *, misaligned: bool = False) -> float | None:
    """The sectors a global access would move coalesced: the profile's ideal, or, for a gather and
    for an access only misaligned (``misaligned_only``), the sectors it moves now (None without
    sector counts). ``misaligned``: the profile's ideal for a misaligned access too."""
    p = ctx.pcs.get(offset)
    if p is None or not p.sectors or p.ideal_sectors is None:
        return None
    if offset in gathers(ctx):
        return float(p.sectors)
    if not misaligned and p.executed and misaligned_only(p.sectors / p.executed, p.ideal_sectors / p.executed):
        return float(p.sectors)
    return float(min(p.ideal_sectors, p.sectors))


def remappable_excess(ctx: KernelContext, offset: int) -> float:
    """1 - ideal/actual sectors of a global access that a new mapping of threads can coalesce (0 for
    a gather, an access only misaligned, when unknown, or when it is coalesced)."""
    return _excess(ctx, offset, misaligned=False)


def sector_excess(ctx: KernelContext, offset: int) -> float:
    """1 - ideal/actual sectors of a global access as profiled, misalignment included (0 for a
    gather or when unknown): the share of its sectors that are not its own data, which advice about
    the access's own requests (Memory Transaction Reduction) leaves to coalescing or to nothing."""
    return _excess(ctx, offset, misaligned=True)


def _excess(ctx: KernelContext, offset: int, *, misaligned: bool) -> float:
    p = ctx.pcs.get(offset)
    if p is None or not p.sectors:
        return 0.0          # ideal_sectors is None: no counts
    i = ideal_sectors(ctx, offset, misaligned=misaligned)
    return max(0.0, 1.0 - i / p.sectors) if i is not None else 0.0


@kernel_fact
def has_sectors(ctx: KernelContext) -> bool:
    """Whether any sampled PC has sector counts (Nsight Compute's; CUPTI's PC sampling has none).
    Without them every ``remappable_excess`` is 0 and the coalescing models have nothing to price:
    optimizers that weigh each blame edge by it skip the walk."""
    return any(p.sectors for p in ctx.pcs.values())


def _access_sites(ctx: KernelContext):
    """(offset, (executed requests, sectors per request, ideal sectors per request, is_store)) of
    every global access with counts."""
    for o, p in ctx.pcs.items():
        if not p.sectors or p.ideal_sectors is None or not p.executed:
            continue
        site = ctx.site(o)
        store = site is not None and site.instruction.base_opcode in GLOBAL_WRITES
        yield o, (p.executed, p.sectors / p.executed, ideal_sectors(ctx, o) / p.executed, store)


def _accesses(ctx: KernelContext):
    """(executed requests, sectors per request, ideal sectors per request, is_store) of every global
    access with counts."""
    for _, a in _access_sites(ctx):
        yield a


@kernel_fact
def looped_offsets(ctx: KernelContext) -> frozenset[int]:
    """Offsets of the instructions inside any loop of the kernel's functions."""
    return frozenset(fb.function.instructions[i].offset for fb in ctx.blames
                     for lp in ctx.loops.get(fb.function.name, ()) for i in lp.instructions)


def transposed(accesses) -> bool:
    """Whether a kernel's global accesses ((executed, sectors, ideal sectors per request, is_store),
    ``_accesses``) hold both a full-line coalesced access and one whose lanes sit in
    separate sectors: the data is read along one index and written (or read) along another, and a
    new mapping of threads moves the excess from one access to the other."""
    full = far = False
    for _, s, i, _ in accesses:
        if i <= 0:
            continue
        if s >= SECTORS_PER_LINE and s <= COALESCED_SLACK * i:
            full = True
        elif s >= FAR * i:
            far = True
    return full and far


@kernel_fact
def transposed_accesses(ctx: KernelContext) -> bool:
    """Whether the kernel's loop-free code reads along one index and writes (or reads) along
    another, so that no mapping of threads coalesces every access (``transposed``). Accesses
    in a loop are a walk (a thread walks its row: lanewalk.py), whose fix is a warp per row, not a
    tile: none may be among them."""
    looped = looped_offsets(ctx)
    sites = list(_access_sites(ctx))
    if any(o in looped for o, _ in sites):
        return False
    return transposed([a for _, a in sites])


def _shared_wavefronts(ctx: KernelContext) -> float:
    n = 0.0
    for o, p in ctx.pcs.items():
        site = ctx.site(o)
        if site is not None and p.executed and site.instruction.base_opcode in SHARED_ACCESSES:
            n += p.executed + (p.bank_conflicts or 0)
    return n


# units each SM has its own of whose profiled share is averaged over every SM's elapsed cycles, idle
# SMs included (issue is averaged over active cycles: already the busy SMs'); benchmarks/saturation/
# spread.cu: on a grid of fewer blocks than SMs ncu's busiest L1 is the average x SMs / blocks
BUSY_SCALED = ("l1", "sm")


def busy_sms(ctx: KernelContext, blocks: int | None = None) -> float:
    """The SMs the launch (or the same launch with ``blocks`` blocks) keeps busy, counted by its
    busiest SM: ``blocks / ceil(blocks / SMs)``. With fewer blocks than SMs, the blocks. With a
    grid held in one wave but not a multiple of the SMs, some SMs hold one block more than others
    and the kernel lasts as long as they do: a per-SM unit's profiled share, averaged over every
    SM's elapsed time, is the busiest SM's times this over the SMs (gemv_resident, 160 blocks on
    132 SMs: L1 56% average, 92% on the SMs with two blocks, where gemv_rows' 256 blocks run it at
    93%). More than a wave: every SM, its blocks handed out as others finish."""
    sms = ctx.device.sm_count or 1
    L = ctx.launch
    n = blocks if blocks is not None else (L.blocks if L is not None else 0)
    if L is None or not n:
        return float(sms)
    if n < sms:
        return float(n)
    if n > waves(ctx.device, L, registers=L.registers, static_shared=L.static_shared).capacity:
        return float(sms)
    return n / math.ceil(n / sms)


@kernel_fact
def model(ctx: KernelContext) -> Model | None:
    """The per-unit model for this kernel, the coalesced code on the SMs the original ran on; None
    without a walk table of the device or its chip (``table_name``), unit throughput (with duration and clock) or sector counts."""
    return model_at(ctx, 1.0)


def model_at(ctx: KernelContext, spread: float, rewalked: float = 0.0) -> Model | None:
    """The per-unit model with the coalesced code's SM-local work (L1, SM pipes, issue) spread by
    ``spread`` (the busy SMs now over the busy SMs after, at most 1): a rewrite that multiplies the
    threads of a grid that left SMs idle puts its work on more of them. Eq. 2 reads the busy SMs'
    shares (``BUSY_SCALED``): the device-wide average counts the idle SMs. ``rewalked``: bytes per
    launch of the ideal sectors that the rewrite serves from the L1 (a warp per row walking its row
    again, ``lanewalk.rewalked_bytes``): no DRAM work after."""
    table = device_table(table_name(ctx))
    tp = ctx.kernel.throughput
    if table is None or tp is None or not tp.duration_ns or not tp.clock_hz:
        return None
    acc = list(_accesses(ctx))
    if not acc:
        return None
    util = dict(tp.units)
    sms = ctx.device.sm_count or 1
    busy = busy_sms(ctx)
    spread = min(1.0, max(spread, busy / sms))
    # the busy SMs' shares of the SM-local units (the same for device-wide ones)
    local = {u: (pct * sms / busy if u in BUSY_SCALED else pct) for u, pct in util.items()}
    # the counters sum the launches the collector profiled (ncu.py), the throughput is per launch
    launches = max(1, len(ctx.kernel.launches))
    # L1: lines per request between s/4 (lanes share lines) and s (a line per sector), placed by the
    # lines the kernel's L1 busy time says it served
    lo = sum(e * max(1.0, s / SECTORS_PER_LINE) for e, s, _, _ in acc)
    hi = sum(e * max(1.0, s) for e, s, _, _ in acc)
    shared = _shared_wavefronts(ctx)
    served = util.get("l1", 0.0) / 100.0 * tp.duration_ns * 1e-9 * tp.clock_hz * sms / table.l1_cycles_per_line
    served *= launches
    alpha = min(1.0, max(0.0, (served - shared - lo) / (hi - lo))) if hi > lo else 0.0

    def lines(s: float) -> float:
        low = max(1.0, s / SECTORS_PER_LINE)
        return low + alpha * (max(1.0, s) - low)

    def ideal_lines(i: float) -> float:
        return max(1.0, i / SECTORS_PER_LINE)

    l1_now = sum(e * lines(s) for e, s, _, _ in acc) + shared
    l1_after = sum(e * ideal_lines(i) for e, _, i, _ in acc) + shared
    ideal_bytes = 32.0 * sum(e * i for e, _, i, _ in acc) / launches
    dram_keep = min(1.0, max(0.0, ideal_bytes - rewalked) / tp.dram_bytes) if tp.dram_bytes else 1.0
    # L2: its busy time now, what DRAM reads fill into it, and the requests from the L1
    stored = 32.0 * sum(e * i for e, _, i, st in acc if st) / launches
    reads = max(0.0, (tp.dram_bytes or 0.0) - stored) / 32.0
    l2_now = util.get("l2", 0.0) / 100.0 * tp.duration_ns * 1e-9
    req_now = sum(e * (table.l2_store_cost(lines(s)) if st else s * table.l2_load_sector) for e, s, _, st in acc)
    req_after = sum(e * (table.l2_store_cost(ideal_lines(i)) if st else i * table.l2_load_sector)
                    for e, _, i, st in acc)
    req_after = max(0.0, req_after - rewalked / 32.0 * launches * table.l2_load_sector)   # served by the L1
    # the coalesced code's footprint, what the profile's cold DRAM bytes become: where the profile
    # saw the kernel launched again, the share of its reads the L2 keeps between launches costs
    # DRAM and the L2's fills nothing (residency.py)
    dram_bytes = tp.dram_bytes or 0.0
    resident = resident_share(ctx.device, dram_bytes * dram_keep) if relaunched(ctx) else 0.0
    # the coalesced code's own L2 requests per launch (req_after sums the profiled launches)
    l2_after = table.l2_kept(l2_now, reads, req_after / req_now if req_now else 1.0, dram_keep, resident,
                             req_after / launches)
    kept_reads = resident * reads * 32.0 / dram_bytes if dram_bytes else 0.0
    roofs = {u: table.roofs.get(u, UNIT_ROOF_DEFAULT) for u in util}
    # the memory stream after: DRAM's bytes at its roof, the kept reads at the L2's resident rate
    # (priced as a share of their DRAM time: the "dram" unit's bound stays one bound)
    stream = 1.0 - kept_reads
    if kept_reads:
        stream += kept_reads * resident_cost(ctx.device, tp, roofs.get("dram", UNIT_ROOF_DEFAULT))
    keep = {"l1": l1_after / l1_now if l1_now else 1.0, "l2": min(1.0, l2_after / l2_now) if l2_now else 1.0,
            "dram": dram_keep * stream, "sm": 1.0, "issue": 1.0}
    # the roofs the coalesced code can reach: a loop-free kernel's DRAM share is held to what its
    # loads in flight pull (loopfree_dram_roof)
    after = dict(roofs)
    extra = {}
    lf = loopfree_dram_roof(ctx, reads * 32.0 * dram_keep)
    if lf is not None and "dram" in after:
        extra["loopfree_inflight"], extra["loopfree_dram_pct"] = lf
        after["dram"] = min(after["dram"], lf[1])
    # gathered rows a warp per row reads: a stream of random rows reaches less of DRAM's peak than a
    # sequential one (gathers.row_gather_roof)
    rg = row_gather_roof(ctx)
    rows_roof = rg is not None and "dram" in after and rg < after["dram"]
    if rows_roof:
        extra["rowgather_dram_pct"] = after["dram"] = rg
    inflight_roof = "dram" in after and after["dram"] < roofs["dram"]
    # writes: the probe's DRAM roof is a read stream's; one that writes as much as it reads turns the
    # bus around and reaches the copy's (``parallelism.turnaround``), linear in the write share between
    write_share = stored / (dram_bytes * dram_keep) if dram_bytes and dram_keep else 0.0
    turn = turnaround(ctx.device) if write_share > 0 and "dram" in after else None
    if turn is not None and turn < 1.0:
        extra["dram_writes"] = min(1.0, write_share)
        after["dram"] = min(after["dram"], roofs["dram"] * (1.0 - (1.0 - turn) * min(1.0, 2.0 * write_share)))
    def left(u: str, pct: float, reach: dict[str, float]) -> float:
        """The unit's kept work as a share of the launch's time at ``reach[u]`` % of its peak."""
        if u in BUSY_SCALED:
            pct *= spread      # the busy SMs' share, spread over the SMs the rewrite fills
        return pct / reach[u] * keep.get(u, 1.0)
    # bound: every unit still does its kept work at no more than the share of peak it can reach
    floor, bound_unit = 0.0, None
    for u, pct in local.items():
        t = left(u, pct, after)
        if t > floor:
            # "mlp": the DRAM held by what the loads in flight pull, not by its peak
            floor, bound_unit = t, (("rows" if rows_roof else "mlp") if u == "dram" and inflight_roof else u)
            if u == "dram" and resident > 0.5:
                # most of the stream is reads the L2 keeps: the launch's fixed cost beside them
                # (the probe's resident line, residency.ramp_ns) is not in the profile's shares
                floor, bound_unit = t + ramp_ns(ctx.device) / tp.duration_ns, "resident"
    bound = 1.0 / floor if floor > 0 else float("inf")
    # unit estimate: Eq. 2 on the busy time of the unit with the most removable time, among the
    # units that held the kernel (a unit below that share overlapped its work with other waits)
    removable, unit = 0.0, None
    for u, pct in local.items():
        f = min(1.0, pct / roofs[u])
        r = f * (1.0 - keep.get(u, 1.0))
        if f >= table.held and r > removable:
            removable, unit = r, u
    rest = 1.0 - removable
    if unit is not None:
        f = min(1.0, local[unit] / roofs[unit])
        rest = unloaded_time(unit, f, keep[unit], local, spread=spread)
    unit_estimate = 1.0 / rest if rest > 0 else float("inf")
    # a transposed loop-free kernel held by the unit its excess loads: the fix is the advised tile,
    # whose loads stream behind its barrier, so its time is every unit's work left at the share it
    # reaches, DRAM's at the tile probe's (tiles.tile_share), not Eq. 2's "the rest of the time
    # stays" (the warps' own latency there is the stream's now)
    share = tile_share(ctx) if unit is not None and lf is not None and "dram" in after \
        and transposed_accesses(ctx) else None
    if share:
        reach = {**after, "dram": min(after["dram"], share * borrowed_share_scale(ctx, "tile"))}
        tile_left = max(left(u, pct, reach) for u, pct in local.items())
        if tile_left > 0:
            unit_estimate = 1.0 / tile_left
            extra["tile_dram_pct"] = reach["dram"]
    if resident > 0.0:
        extra["resident"] = resident
    if busy < sms:
        extra["busy_sms"] = busy
    if spread < 1.0:
        extra["spread"] = spread
    return Model(keep=keep, util=util, roofs=roofs, alpha=alpha, bound=max(1.0, bound), bound_unit=bound_unit,
                 unit_estimate=unit_estimate, unit=unit, extra=extra, ideal_bytes=ideal_bytes)


def unloaded_time(unit: str, f: float, keep: float, util: dict[str, float], *, spread: float = 1.0) -> float:
    """The time left (share of the original's) when coalescing keeps ``keep`` of the work of the
    ``unit`` that held the kernel at ``f`` of its roof: Eq. 2, ``(1 - f) + f keep``, except that
    once the L1 no longer holds the kernel the issue slots' work it used to hide combines with
    the L1's work left by their p-norm (``OVERLAP_P``; the instructions, hence the issue slots'
    busy time, are the same after coalescing). The overlap probe measured the L1 against issue;
    other units keep Eq. 2. Where the rewrite spreads the work over more SMs (``spread`` < 1: the
    busy SMs before over after), each SM has that share of the L1's and the issue's work left; the
    rest of the time (``1 - f``: the warps' own latency) is kept as Eq. 2 keeps it."""
    kept = f * keep
    issue = util.get("issue")
    if unit == "l1" and issue:
        s = min(1.0, issue / UNIT_ROOF_DEFAULT)
        kept = (kept ** OVERLAP_P + s ** OVERLAP_P) ** (1.0 / OVERLAP_P)
    if unit == "l1":
        kept *= spread
    return (1.0 - f) + kept


def loopfree_dram_roof(ctx: KernelContext, read_bytes: float) -> tuple[float, float] | None:
    """(DRAM bytes in flight per SM, the DRAM share % they reach) of the coalesced code of a
    loop-free kernel, or None: a loop holds an access coalescing would change, or the inputs are
    missing.

    Why: coalescing a loop-free kernel remaps its index -- the same threads, each with the same loads
    -- and each warp then has its DRAM lines in flight once (``read_bytes`` per launch over the warps
    launched) before it computes, stores and exits. The loop-free probe (``loopfree_probe.cu``)
    measured on the H100 that such a kernel pulls what a streaming loop pulls with the same DRAM
    bytes in flight at 64 warps per SM (8 KB: 69% against 69%; 16 KB: 82% against 83%), less
    with fewer, and that loads served by the L1 add nothing (``lfhit``: 68% at 8 KB); so the DRAM
    share the coalesced code can reach is the probe's at ``resident warps x DRAM bytes per warp``,
    not the 93% of a DRAM stream with plenty in flight. A loop's fix may change the threads (a
    warp per row), so its bytes in flight after it are not known: no roof. Dropped, as the
    memory-parallelism roof is (``parallelism.mlp_bound``), where the original already runs its
    DRAM at or above it (bitonic_global: a launch of 8 us whose data the L2 holds, 31% of DRAM's
    peak against the 27% its bytes per warp would pull). The curve is the device's own loop-free
    probe, else its chip's (``coalescing_name``), whose shares are then converted to this device's
    peak (``borrowed_share_scale``). The coalesced code's form (tiles.py): a transposed kernel's
    advised tile keeps 4 lines per warp in flight behind a barrier, and blocks over 512 threads
    keep the original's block drain; each is a factor of the tile probe's on the curve."""
    launch, occ = ctx.launch, ctx.occupancy
    table = device_table(coalescing_name(ctx.device, "loopfree"))
    if table is None or not table.loopfree or launch is None or occ is None or occ.active_warps <= 0 or read_bytes <= 0:
        return None
    looped = looped_offsets(ctx)
    if any(o in looped for o in ctx.pcs if remappable_excess(ctx, o) > 0):
        return None
    warps = launch.blocks * math.ceil(max(1, launch.threads_per_block) / 32)
    # the coalesced code's form (tiles.py): the advised tile of a transposed kernel moves more per
    # thread, and a barrier or large blocks hold the share below the curve's
    more, factor = coalesced_form(ctx, transposed_accesses(ctx))
    inflight = occ.active_warps * read_bytes / warps * more
    reach = attainable(table.loopfree, inflight)
    tp = ctx.kernel.throughput
    if reach is not None:
        reach *= borrowed_share_scale(ctx, "loopfree") * factor   # another device's curve: its bytes per second
    if reach is None or tp is None or (tp.pct("dram") or 0.0) >= reach:
        return None   # the original already pulls more than its DRAM bytes in flight would: the roof says nothing
    return inflight, reach


def lsu_excess_share(ctx: KernelContext) -> float:
    """The share of the L1's (LSU data path's) work that the excess lines of uncoalesced accesses
    are: what coalescing removes from it (0 without the model)."""
    m = model(ctx)
    return 1.0 - m.keep["l1"] if m is not None else 0.0


# --- the same probe, for Warp Divergence ------------------------------------------------------

@lru_cache(maxsize=None)
def gather_latency(name: str) -> tuple[tuple[float, float], ...]:
    """(sectors per request, time of one warp iteration relative to one active lane) of the probe's
    divergent gather loop at its fewest warps per SM (latency-bound), rising; empty without a table.

    A lanes of a warp walk a list, an index load and a gather per entry: converging (A = 32)
    divides the iterations by 32 but each gathers 32 lanes' sectors, and the iteration takes
    longer (H100, 8 warps per SM: 1.39x at 4 lanes, 1.82x at 8, 3.55x at 32)."""
    d = coalescing_devices().get(name) or {}
    rows = d.get("divergence") or []
    if not rows:
        return ()
    fewest = min(r["warps_per_sm"] for r in rows)
    rows = sorted((r for r in rows if r["warps_per_sm"] == fewest), key=lambda r: r["active_lanes"])
    # one iteration: the launch's time over the entries each active lane walks (x active lanes)
    one = rows[0]["duration_ns"] * rows[0]["active_lanes"]
    return tuple((r["sectors_per_request"], r["duration_ns"] * r["active_lanes"] / one) for r in rows)


def latency_growth(name: str, sectors_now: float, sectors_after: float) -> float:
    """How much longer one gather of ``sectors_after`` sectors per request takes than one of
    ``sectors_now`` (the probe's curve, linear between its points, flat beyond them: no
    extrapolation); 1.0 without a table."""
    pts = gather_latency(name)
    if not pts:
        return 1.0
    return max(1.0, linear_flat(pts, sectors_after) / linear_flat(pts, sectors_now))
