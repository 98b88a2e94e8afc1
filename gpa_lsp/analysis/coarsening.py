"""Narrow coalesced streams: what taking several consecutive elements per thread, each stream moved
with one vector access, saves; and what an arithmetic change cannot save on such a kernel.

Mechanism. An elementwise kernel whose thread loads one 1- to 4-byte element of each stream
(``in[i]``, coalesced across the warp) pays its whole per-thread cost for that element: the index
math (a division by a run-time size, the bounds check), the loads that depend on the index only
(``scale[c]``), the exit. And each warp keeps only 32 elements of a stream in flight, so by
Little's law the stream cannot pull DRAM's peak. Taking k consecutive elements per thread with one
vector access per stream shares that cost among the k elements and multiplies the bytes each warp
keeps in flight by k; the bytes DRAM and the L2 move stay the same.

Two facts of the loop-free probe (``benchmarks/coalescing/loopfree_probe.cu``, rows in
``gpa_lsp/data/coalescing.json``; tests/analysis/test_coarsening.py reads both back):
- the time of a kernel with issue work beside its DRAM loads (``lfalu`` rows) is the load-only
  kernel's and the issue time overlapped at ``coalescing.OVERLAP_P`` (``_overlap``), within 15% at
  32-64 warps per SM;
- at equal bytes of loads in flight the DRAM share *per byte loaded* is the same (``lf_mM`` rows,
  M floats loaded per float stored), so a kernel's share is the probe's per byte loaded times the
  kernel's DRAM bytes per byte its streams load (``_curve``).

A kernel is a ``Stream`` when its coalesced narrow accesses move at least half its DRAM bytes, every
other global load is a warp-wide broadcast (one sector per request: the k elements share it) or
computes on a stream's value (``lut[in[i]]``), and the overlap of its DRAM time (its bytes at what
its stream loads in flight pull) and its issue explains at least ``widening.HELD_PCT`` of the
measured time (else latency holds it, which nothing here prices). The estimate of k elements per
thread (``coarsening``) is the measured time (at most the model's) over the busiest after:
- the stream: its DRAM bytes at what k times the loads in flight pull, overlapped with the issue
  after: the per-thread instructions over k, the stream accesses over k (one vector access carries
  k elements), those that compute on the loaded values (their forward slice) as many as before,
  weighted by executed counts;
- the L2: the streams' sectors stay, at the walk probe's roof; those of the loads the k elements
  share (``scale[c]``) fall by k;
- the L1: a warp's access costs a pass per 128-byte line, so a byte stream's passes fall by up to
  4 (a float stream's stay), and the shared loads' by k.
An arithmetic change (``Stream.issue_cut_bound``) on a loop-free stream takes its estimate's time saved
off the issue alone: the DRAM bytes still take what the loads in flight pull. Loops are left out
of that bound: a loop's next load can be in flight while this element computes, which the
loop-free probe did not measure.

Calibration: channel_affine_nchw (issue 77%, DRAM 50%: float4 measured 1.72x, priced 1.61x; the
divisions' removal 0.96-1.04x, bounded to 1.03x) and saxpy_stream (a loop at 82% of DRAM's peak:
vector4 1.03x, priced 1.01x). k is the elements of the widest stream in one 16-byte access (4 floats,
8 halves, 16 bytes): calibration threshold_u8 (bytes: 2, 4, 8, 16 per thread measured 1.75x, 2.96x,
4.52x, 5.19x) and scale_rows_half (halves: 2, 4, 8, 16 measured 1.72x, 2.54x, 2.89x, 2.72x, the
last two 16-byte accesses per stream). Without per-instruction sector counts (CUPTI) nothing is
priced.

Interleaved channels (``_interleaved``). A load of one channel of an interleaved array of 8- or
16-bit elements (RGB bytes, YUYV, 6-channel PCM) by one thread per planar output touches C times
the sectors of consecutive elements, and the other channels' threads read the same lines: DRAM
moves each line once (its bytes count once towards the streams' share), the L2 serves it C times.
Such a load is a stream with C channels: after, a thread takes k positions with all C channels
(contiguous bytes in 16-byte vector accesses, one vector store per plane), so its per-thread work
falls by k x C, the array's sectors and L1 passes by C, its loads in flight grow by k x C. Where the
thread loads the other channels itself (another load of the same width from the same address
register: an RGBA tap, a row of byte neighbours) the lines are the one warp's already and it is
not priced (``_sibling_channels``). Calibration: pcm_deinterleave (16-bit, C = 6: coarsen_2/4/8
measured 2.22x, 2.19x, 1.42x; priced 2.57x at k = 4) and yuyv_to_planar (bytes, C = 2: 3.12x,
3.09x, 1.58x; priced 3.29x). Validation after: rgb_planar (bytes, C = 3) 1.01x -> 3.69x (pixel4,
4 positions with all channels, 3.70x).
"""

from __future__ import annotations

from dataclasses import dataclass

from .coalescing import (OVERLAP_P, UNIT_ROOF_DEFAULT, borrowed_share_scale, device_table, looped_offsets,
                         loopfree_points, table_name)
from ..sass.operands import address_registers, memory_operand
from .context import KernelContext, kernel_fact
from .parallelism import attainable, curve
from .probe_tables import coalescing_rows, mlp_curve_scale, mlp_name
from .widening import HELD_PCT

WIDE_BYTES = 16          # one vector access per stream and thread
LINE_BYTES = 128
STREAM_SHARE = 0.5       # the streams' least share of the kernel's DRAM bytes for it to be a stream
SLACK = 1.1              # sectors over ideal at or below which an access is coalesced
DISTINCT = 0.9           # a stream's lanes touch at least this share of a warp's consecutive sectors
INTERLEAVED_BITS = 16    # interleaved channels priced: 8- and 16-bit (calibration yuyv_to_planar, pcm_deinterleave)
MAX_CHANNELS = 8


@dataclass(frozen=True)
class Coarsening:
    estimate: float
    elements: int                  # k: consecutive elements per thread
    streams: frozenset[int]        # offsets of the stream accesses
    issue_ratio: float             # instructions after over before
    bound_unit: str                # the busiest unit after
    now: float                     # the stream's modeled time now, a share of the measured time
    after: dict                    # unit -> its time after, a share of the measured time
    channels: int = 1              # C of the interleaved array a thread then loads whole (1: none)


def _global(ins) -> bool:
    m = ins.memory
    return m is not None and m.space in ("global", "generic") and not m.atomic


def _stream(ins, p) -> bool:
    """A warp-wide access of consecutive narrow elements: every lane its own element (not a broadcast),
    coalesced."""
    m = ins.memory
    if not (m.plain_load or m.global_write) or not m.width or m.width // 8 >= WIDE_BYTES:
        return False
    if not p or not p.executed or not p.sectors or not p.ideal_sectors:
        return False
    per_request = 32 * (m.width // 8) / 32.0        # sectors a warp of consecutive elements touches
    return p.sectors <= SLACK * p.ideal_sectors and p.sectors >= DISTINCT * per_request * p.executed


def _interleaved(ins, p) -> int:
    """C when the access loads one channel of an interleaved array of 8- or 16-bit elements (C
    channels, lanes C elements apart: C times the sectors of consecutive elements, 2 <= C <= 8), the
    other channels loaded by other threads over the same lines (so DRAM moves each line once and
    the L2 serves it C times); else 0."""
    m = ins.memory
    if not m.plain_load or not m.width or m.width > INTERLEAVED_BITS:
        return 0
    if not p or not p.executed or not p.sectors or not p.ideal_sectors:
        return 0
    ratio = p.sectors / p.ideal_sectors
    c = round(ratio)
    return c if 2 <= c <= MAX_CHANNELS and abs(ratio - c) <= (SLACK - 1.0) * c else 0


def _sibling_channels(ctx: KernelContext, channels: dict[int, int]) -> set[int]:
    """The interleaved loads whose thread loads other channels itself: another load of the same width
    from the same address register (``p[0]``, ``p[1]``, ``p[2]`` of an RGBA tap or a row of
    neighbours). Those lines are read by the one warp already: it is not one channel of C."""
    out: set[int] = set()
    for fb in ctx.blames:
        by: dict[tuple, list[int]] = {}
        for ins in fb.function.instructions:
            m = ins.memory
            if m is not None and m.plain_load and _global(ins):
                by.setdefault((address_registers(memory_operand(ins.operands)), m.width), []).append(ins.offset)
        for group in by.values():
            if len(group) > 1:
                out |= {o for o in group if channels.get(o, 1) > 1}
    return out


@dataclass(frozen=True)
class Stream:
    """A kernel whose DRAM traffic is narrow coalesced streams, and its time as the overlap of what
    the streams' loads in flight pull and the issue slots (shares of the measured time)."""

    accesses: dict                 # offset -> instruction of the stream accesses
    channels: dict                 # offset -> C of an interleaved load (1: consecutive elements)
    per_element: frozenset[int]    # offsets that compute on the loaded values
    points: tuple                  # the DRAM curve: stream-load bytes in flight per SM -> share %
    scale: float                   # the curve's share on this device's peak
    inflight: float                # stream-load bytes in flight per SM now
    memory: float                  # the DRAM bytes' time at what ``inflight`` pulls
    issue: float                   # the issue slots' share
    now: float                     # the two together (``_overlap``)
    looped: bool                   # the streams run in a loop

    def issue_cut_bound(self, estimate: float) -> float:
        """The most an arithmetic change (streams as they are) estimated at ``estimate`` gains: its
        time saved taken from the issue slots alone, the DRAM bytes still at what the loads in
        flight pull (the time now over the memory's and the issue's after). Callers leave out
        streams in a loop (``cut_stream``)."""
        if estimate <= 1.0:
            return float("inf")
        issue_after = max(0.0, self.issue - (1.0 - 1.0 / estimate))
        return max(1.0, min(1.0, self.now) / max(_overlap(self.memory, issue_after), 1e-9))


def cut_stream(ctx: KernelContext) -> Stream | None:
    """The stream whose ``issue_cut_bound`` holds an arithmetic change, or None: no stream, or its
    streams run in a loop (the overlap was measured on loop-free kernels, the loop-free probe's
    ``lfalu`` rows, and a loop's next load may be in flight while this element computes)."""
    s = stream(ctx)
    return s if s is not None and not s.looped else None


@kernel_fact
def stream(ctx: KernelContext) -> Stream | None:
    """The kernel's streams, or None: no DRAM measurement or sector counts, streams that move less
    than half its DRAM bytes, another load the elements would not share (the module docstring), or
    a modeled time under ``widening.HELD_PCT`` of the measured one (latency holds it)."""
    t = ctx.kernel.throughput
    occ = ctx.occupancy
    units = dict(t.units) if t is not None else {}
    if not units.get("dram") or not t.dram_bytes or occ is None or occ.active_warps <= 0:
        return None
    pcs = ctx.pcs
    streams: dict[int, object] = {}
    channels: dict[int, int] = {}
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            p = pcs.get(ins.offset)
            if _global(ins) and p is not None and p.sectors:
                c = 1 if _stream(ins, p) else _interleaved(ins, p)
                if c:
                    streams[ins.offset], channels[ins.offset] = ins, c
    for o in _sibling_channels(ctx, channels):
        del streams[o], channels[o]
    loads = [o for o, ins in streams.items() if ins.memory.plain_load]
    launches = max(1, len(ctx.kernel.launches))   # the counters sum the launches profiled (coalescing.model_at)
    # an interleaved load's lines move from DRAM once for its C channels
    dram = {o: 32.0 * pcs[o].sectors / channels[o] / launches for o in streams}
    if not loads or sum(dram.values()) < STREAM_SHARE * t.dram_bytes:
        return None
    per_element = _slice(ctx, streams)
    if not _shared_loads(ctx, streams, per_element):
        return None
    loaded = sum(dram[o] for o in loads)
    looped = bool(looped_offsets(ctx) & streams.keys())
    points, scale = _curve(ctx, streams, t.dram_bytes / loaded, looped)
    inflight = occ.active_warps * sum(32 * (streams[o].memory.width // 8) for o in loads)
    reach = attainable(points, inflight)
    if reach is None:
        return None
    memory = units["dram"] / (reach * scale)
    issue = units.get("issue", 0.0) / UNIT_ROOF_DEFAULT
    now = _overlap(memory, issue)
    if now * 100.0 < HELD_PCT:
        return None
    return Stream(streams, channels, per_element, points, scale, inflight, memory, issue, now, looped)


@kernel_fact
def coarsening(ctx: KernelContext) -> Coarsening | None:
    """The module docstring's estimate, or None where it does not apply."""
    s = stream(ctx)
    table = device_table(table_name(ctx))
    if s is None or table is None:
        return None
    k = WIDE_BYTES // max(ins.memory.width // 8 for ins in s.accesses.values())
    ratio = _issue_ratio(ctx, s, k)
    # a thread's loads after: k elements of each stream, k x C of an interleaved array
    inflight = ctx.occupancy.active_warps * sum(32 * (ins.memory.width // 8) * k * s.channels[o]
                                                for o, ins in s.accesses.items() if ins.memory.plain_load)
    reach = attainable(s.points, inflight)
    if k < 2 or ratio is None or reach is None:
        return None
    units = dict(ctx.kernel.throughput.units)
    after = {"stream": _overlap(units["dram"] / (reach * s.scale), s.issue * ratio)}
    l1, l2 = _memory_ratios(ctx, s, k)
    for u, keep in (("l2", l2), ("l1", l1)):
        if u in units:
            after[u] = units[u] * keep / table.roofs.get(u, UNIT_ROOF_DEFAULT)
    unit = max(after, key=after.get)
    return Coarsening(max(1.0, min(1.0, s.now) / max(after[unit], 1e-9)), k, frozenset(s.accesses), ratio, unit,
                      s.now, after, max(s.channels.values()))


def _overlap(memory: float, issue: float) -> float:
    """The time of a stream's DRAM share and its issue share together (``coalescing.OVERLAP_P``)."""
    return (memory ** OVERLAP_P + issue ** OVERLAP_P) ** (1.0 / OVERLAP_P)


def _curve(ctx: KernelContext, streams: dict, moved: float, looped: bool) -> tuple[tuple[tuple[float, float], ...], float]:
    """(bytes of stream loads in flight per SM -> DRAM share %, the scale to this device's peak).

    Streams outside every loop (each warp's loads in flight once): the loop-free probe's kernels
    (``lf_mM``), each row's share per byte it loaded times the kernel's DRAM bytes per byte its
    streams load (``moved``), up to the probe's highest share. Why per byte loaded: by Little's law
    the loads in flight set how many elements are under way, and each element moves its loaded and
    stored bytes; the probe loads M floats and stores one, a kernel that loads one byte and stores
    a float moves five bytes per byte in flight. Streams in a loop: the streaming loop's curve
    (``parallelism.curve``) as it is."""
    if not looped:
        rows = [r for r in coalescing_rows(ctx.device, "loopfree") if r.get("dram_read_bytes")]
        top = max((r["dram_pct"] for r in rows if r["config"].startswith("lf_m") and r.get("dram_pct")), default=0.0)
        if top:
            def share(r):
                read = r["dram_read_bytes"] / (r["dram_read_bytes"] + r["dram_write_bytes"])
                return min(top, r["dram_pct"] * read * moved)
            return loopfree_points(rows, ("lf_m",), share), borrowed_share_scale(ctx, "loopfree")
    writes = any(ins.memory.global_write for ins in streams.values())
    return curve(mlp_name(ctx.device), "copy" if writes else "read"), mlp_curve_scale(ctx)


def _slice(ctx: KernelContext, streams: dict) -> frozenset[int]:
    """Offsets of the instructions that compute on the stream loads' values: their forward slice
    through registers and predicates, in layout order (a register written from untainted values is
    clean again), twice over so that a loop's carried values are in it; the stream accesses
    themselves left out."""
    out: set[int] = set()
    for fb in ctx.blames:
        tainted: set[str] = set()
        for _ in range(2):
            for ins in fb.function.instructions:
                if ins.offset in streams:
                    if ins.memory.plain_load:
                        tainted |= set(ins.dsts)
                    continue
                if tainted & set(ins.srcs):
                    out.add(ins.offset)
                    tainted |= set(ins.dsts)
                elif ins.predicate is None:
                    tainted -= set(ins.dsts)
    return frozenset(out)


def _shared_loads(ctx: KernelContext, streams: dict, per_element: frozenset[int]) -> bool:
    """Whether every other global load is one the k elements share (a warp-wide broadcast:
    ``scale[c]``, one sector per request) or computes on a stream's value (``lut[in[i]]``): a
    stencil's neighbouring taps or a gather by the thread's index is neither, and coarsening those
    is another change (register tiling)."""
    pcs = ctx.pcs
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            m = ins.memory
            if m is None or not m.plain_load or not _global(ins) or ins.offset in streams or ins.offset in per_element:
                continue
            p = pcs.get(ins.offset)
            if p is None or not p.executed:
                continue
            if not p.sectors or p.sectors > SLACK * p.executed:
                return False
    return True


def _issue_ratio(ctx: KernelContext, s: Stream, k: int) -> float | None:
    """Instructions after over before (the module docstring), weighted by executed counts. A thread
    that loads k positions of all C channels of an interleaved array serves k x C outputs: its
    per-thread instructions fall by k x C, the interleaved loads to one 16-byte access per
    16 bytes."""
    total = elementwise = accesses = accesses_after = 0.0
    c = max(s.channels.values())
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            p = ctx.pcs.get(ins.offset)
            n = p.executed if p is not None and p.executed else 0
            total += n
            if ins.offset in s.accesses:
                accesses += n
                ch = s.channels[ins.offset]
                vectors = -(-k * ch * (ins.memory.width // 8) // WIDE_BYTES)
                accesses_after += n / k if ch == 1 else n / (k * ch) * vectors
            elif ins.offset in s.per_element:
                elementwise += n
    if not total:
        return None
    per_thread = total - elementwise - accesses
    return (per_thread / (k * c) + accesses_after + elementwise) / total


def _memory_ratios(ctx: KernelContext, s: Stream, k: int) -> tuple[float, float]:
    """(the L1's global passes, the L2's sectors) after over before. A warp's access costs the L1 a
    pass per line it touches: a stream's k elements in one vector access take ``max(1, 32 x width x
    k / 128)`` passes where k accesses took k. The loads the k elements share (a broadcast such as
    ``scale[c]``: not a stream, not computed from one) run once per k elements, passes and sectors;
    the streams' sectors and those of loads on the loaded values stay."""
    passes = passes_after = sectors = sectors_after = 0.0
    for o, p in ctx.pcs.items():
        site = ctx.site(o)
        if site is None or not p.executed or not _global(site.instruction):
            continue
        n = max(p.executed, (p.sectors or 0) / 4.0)
        passes += n
        sectors += p.sectors or 0
        if o in s.accesses:
            width, ch = site.instruction.memory.width // 8, s.channels[o]
            passes_after += p.executed / (k * ch) * max(1.0, 32 * width * k * ch / LINE_BYTES)
            sectors_after += (p.sectors or 0) / ch       # an interleaved array's lines read once
        elif o in s.per_element or not site.instruction.memory.plain_load:
            passes_after += n
            sectors_after += p.sectors or 0
        else:
            passes_after += n / k
            sectors_after += (p.sectors or 0) / k
    return (passes_after / passes if passes else 1.0), (sectors_after / sectors if sectors else 1.0)
