"""Gathers: global accesses whose address is data (``x[col[j]]``), found in the SASS, and what
merging the gathers that share an index into one record gather saves, measured on the device by
``benchmarks/coalescing/fieldgather_probe.cu`` (table: ``gpa_lsp/data/coalescing.json``,
``fieldgather``).

*A gather*: in its innermost loop's iteration, or in the code outside loops, the address comes from
a value a global load returned (in code outside loops, what a loop wrote counts as plain: a walk's
position after the loop, as in the remainder of an unrolled loop). No mapping of threads to data
coalesces it: the probe's column-major walk (``lanewalk_probe`` ``ell``, gather=1) keeps its gather
at 31 sectors per request while the walk's own loads drop to 4. So Global Memory Coalescing claims
neither its stalls nor its sectors (``analysis/coalescing.py``).

*A row gather* is not that (``row_gathers``): the loads whose addresses come from one loaded value
through one base register, at immediate offsets that cover at least a 128-byte line contiguously,
are a thread walking a gathered row whole (``row = feat + id * F; for f: acc[f] += row[f]``,
the feature loop unrolled). Which row is data, but the row itself is contiguous, and a warp per row
(lanes over its elements) reads each line once: the per-lane walk of ``lanewalk_probe``, whose
rows a warp per row coalesces, with each row's start loaded. The calibration case gnn_aggregate
(16 gathered 32-float rows per thread) measured 5.65x for a warp per node by kernel durations. Such
loads are walks for the coalescing models; ``gathers`` leaves them out (``gather_roots`` keeps every
gather, for the merges below). Coalesced, random rows still reach less of DRAM's peak than a
sequential stream (``row_gather_roof``, ``benchmarks/coalescing/rowgather_probe.cu``).

*Gathers sharing an index* (``ex[c]``, ``ey[c]``, ``ez[c]``: the addresses of k gathers come from
the same loaded value, each 4 or 8 bytes, k x width <= 16 bytes) can be one gather of a record
(``e[c]`` as a float4). The probe (2^22 random indices into 2^24 records, more than the L2 holds)
measured on the H100: every 4-byte random gather reads 64 bytes from DRAM (the DRAM's access
granularity), so 1-4 separate gathers read 208, 479, 748, 1017 MB and took 0.10, 0.24, 0.38, 0.51 ms,
while one 8- or 16-byte record gather read 250 or 268 MB and took 0.13 or 0.14 ms: the time follows
the DRAM bytes, the DRAM at 61-67% of its peak whatever the number of gathers (random 64-byte
accesses reach no more). The model (``merge_estimate``): the kernel's DRAM bytes less what its other
global accesses need (their bytes per thread x threads) are its gathers' bytes, the same for each
gather; merging a group of k leaves 1/k of the group's; where the kernel's DRAM runs at least at the
share the probe's gathers reached (it holds the time), the time follows the DRAM bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ..sass.operands import address_registers, memory_operand
from .context import KernelContext, kernel_fact
from .curves import linear_flat
from .probe_tables import coalescing_devices, coalescing_name, coalescing_rows

RECORD_BYTES = 16          # the widest load (LDG.128) a merged record gather can be
LINE_BYTES = 128           # a row gather reads at least one line contiguously (row_gathers)
_IMMEDIATE = re.compile(r"\+\s*(-?0x[0-9a-fA-F]+|-?\d+)\s*\]$")


def _global(ins) -> bool:
    return ins.memory is not None and ins.memory.space in ("global", "generic")


def _indirect(instructions, looped: frozenset[int] = frozenset()) -> dict[int, frozenset[int]]:
    """The global accesses of one pass of ``instructions`` (in program order) whose address comes from
    a value a global load of the same pass returned: offset -> the offsets of those loads (values from
    before the pass count as plain). An instruction at an offset of ``looped`` belongs to a loop the
    pass does not look into: what it writes is loop-carried, plain, and its accesses are not judged.

    A register's loads are kept as a node: a frozenset, or a tuple of the nodes whose union it is,
    flattened only where an address needs it (``_flatten``). Why: in a chain of arithmetic on loaded
    values (an unrolled reduction) each result comes from every load before it, and building that
    set at every instruction was quadratic (4.5 s of `analyze` at 50,000 instructions)."""
    roots: dict[str, object] = {}
    out: dict[int, frozenset[int]] = {}
    memo: dict[int, tuple] = {}
    for ins in instructions:
        if ins.offset in looped:
            for r in ins.dsts:
                roots.pop(r, None)
            continue
        if _global(ins):
            parts = [roots[r] for r in address_registers(memory_operand(ins.operands)) if r in roots]
            if parts:
                out[ins.offset] = _flatten(parts[0] if len(parts) == 1 else tuple(parts), memo)
            if ins.memory.load:
                for r in ins.dsts:
                    roots[r] = frozenset({ins.offset})
                continue
        parts = [roots[r] for r in ins.srcs if r in roots]
        came = None if not parts else parts[0] if len(parts) == 1 else tuple(parts)
        for r in ins.dsts:
            if came is not None:
                roots[r] = came
            else:
                roots.pop(r, None)
    return out


def _flatten(node, memo: dict[int, tuple]) -> frozenset[int]:
    """The loads of a node of ``_indirect`` (every node holds at least one), without recursion (chains
    are as long as the code). ``memo``: id of a node -> (the node, its loads); the node is kept so its id
    stays its own."""
    if isinstance(node, frozenset):
        return node
    stack = [node]
    while stack:
        n = stack[-1]
        if id(n) in memo:
            stack.pop()
            continue
        pending = [p for p in n if not isinstance(p, frozenset) and id(p) not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[id(n)] = (n, frozenset().union(*(p if isinstance(p, frozenset) else memo[id(p)][1] for p in n)))
        stack.pop()
    return memo[id(node)][1]


@kernel_fact
def gather_roots(ctx: KernelContext) -> dict[int, frozenset[int]]:
    """Every gather (see the module's docstring) -> the loads whose values its address comes from."""
    out: dict[int, frozenset[int]] = {}
    for fb in ctx.blames:
        fn = fb.function
        loops = ctx.loops.get(fn.name, ())
        parents = {lp.parent for lp in loops}
        looped: set[int] = set()
        for lp in loops:
            looped |= {fn.instructions[i].offset for i in lp.instructions}
            if lp.header_offset not in parents:
                out.update(_indirect(fn.instructions[i] for i in sorted(lp.instructions)))
        for o, r in _indirect(fn.instructions, frozenset(looped)).items():
            out.setdefault(o, r)
    return out


def _immediate(operand: str) -> int:
    """The immediate offset of a memory operand (``[R4.64+0x7c]``: 124), 0 without one."""
    m = _IMMEDIATE.search(operand)
    return int(m.group(1), 0) if m else 0


@kernel_fact
def row_runs(ctx: KernelContext) -> tuple[tuple[frozenset[int], int], ...]:
    """(the loads, the bytes they cover) of each gathered row a thread reads whole (see the module's
    docstring): grouped by the one loaded value their address comes from and their base registers,
    the stretches of immediate offsets that cover at least ``LINE_BYTES`` contiguously."""
    groups: dict[tuple, list[tuple[int, int, int]]] = {}
    for o, r in gather_roots(ctx).items():
        site = ctx.site(o)
        if site is None or len(r) != 1:
            continue
        ins = site.instruction
        m = ins.memory
        if m is None or not m.plain_load or not m.width:
            continue
        op = memory_operand(ins.operands) or ""
        groups.setdefault((next(iter(r)), address_registers(op)), []).append((_immediate(op), m.width // 8, o))
    return tuple(run for loads in groups.values() for run in contiguous_runs(loads, LINE_BYTES))


def contiguous_runs(loads: list[tuple[int, int, int]], min_bytes: int) -> list[tuple[frozenset[int], int]]:
    """(offsets, bytes covered) of each stretch of ``loads`` -- (immediate offset, bytes, instruction
    offset) from one base -- whose immediates cover at least ``min_bytes`` contiguously."""
    out: list[tuple[frozenset[int], int]] = []
    run: list[int] = []
    start = end = None
    for imm, width, o in sorted(loads) + [(None, 0, None)]:
        if imm is not None and end is not None and imm <= end:
            run.append(o)
            end = max(end, imm + width)
            continue
        if end is not None and end - start >= min_bytes:
            out.append((frozenset(run), end - start))
        if imm is not None:
            run, start, end = [o], imm, imm + width
    return out


@kernel_fact
def row_gathers(ctx: KernelContext) -> frozenset[int]:
    """Offsets of the gather loads that read a gathered row whole (``row_runs``)."""
    return frozenset().union(*(run for run, _ in row_runs(ctx)))


# the share of the kernel's global load sectors its row gathers must move for their DRAM roof to be
# the kernel's: the rows are then most of what DRAM reads
ROWS_HOLD = 0.5


@kernel_fact
def row_gather_roof(ctx: KernelContext) -> float | None:
    """The DRAM share % a warp per row reaches on the kernel's gathered rows (``row_runs``), or None:
    no row gathers, rows a minority of the global load sectors, or no probe rows for the device's
    chip.

    Why: coalesced, a row gather reads each row's lines once, but the rows sit at random places in
    the table, and a stream of random rows does not reach the 93-94% of DRAM's peak a sequential
    stream does. ``benchmarks/coalescing/rowgather_probe.cu`` (H200; a warp per row, 16 random rows
    per output from a 1 GiB table): at 64 warps per SM rows of 64 bytes reached 51.9%, 128 bytes
    78.9%, 256 bytes 82.5%, 512 bytes 85.8%, 1024 bytes 82.0% (less with fewer warps: the best over
    warps is the roof). The row's bytes are the longest run's, placed on the probe's sizes linearly
    in log2 (clamped at both ends). Calibration: gnn_aggregate's warp per node (rows of 128 bytes)
    ran its DRAM at 76.2% (ncu, benchmarks/coalescing/recorded/cases_gnn_aggregate.h200.csv). The
    share is taken as a share of the device's own peak (row-buffer locality, not a latency: no
    conversion for a borrowed table)."""
    runs = row_runs(ctx)
    if not runs:
        return None
    rows = coalescing_rows(ctx.device, "rowgather")
    if not rows:
        return None
    rowed = frozenset().union(*(run for run, _ in runs))
    total = sum(p.sectors for o, p in ctx.pcs.items() if p.sectors and _load_at(ctx, o))
    mine = sum(ctx.pcs[o].sectors for o in rowed if o in ctx.pcs and ctx.pcs[o].sectors)
    if not total or mine < ROWS_HOLD * total:
        return None
    best: dict[int, float] = {}
    for r in rows:
        size = int(r["config"].rsplit("_r", 1)[1])
        best[size] = max(best.get(size, 0.0), r.get("dram_pct") or 0.0)
    # linear in log2(row bytes) between the probe's sizes, flat beyond them
    return linear_flat([(math.log2(size), pct) for size, pct in sorted(best.items())],
                       math.log2(max(b for _, b in runs)))


def _load_at(ctx: KernelContext, offset: int) -> bool:
    site = ctx.site(offset)
    m = site.instruction.memory if site is not None else None
    return m is not None and m.plain_load


def gathers(ctx: KernelContext) -> frozenset[int]:
    """Offsets of the global accesses whose address is data (a gather or scatter) that no mapping of
    threads coalesces: every gather but the loads of a row gather (``row_gathers``)."""
    return frozenset(gather_roots(ctx)) - row_gathers(ctx)


@kernel_fact
def index_groups(ctx: KernelContext) -> tuple[tuple[int, ...], ...]:
    """Groups of two or more gather loads whose addresses come from the same one loaded value, of one
    width of 4 or 8 bytes, that one record load of at most 16 bytes holds: merging candidates."""
    by_root: dict[tuple[int, int], list[int]] = {}
    for o, r in gather_roots(ctx).items():
        site = ctx.site(o)
        if site is None or len(r) != 1:
            continue
        m = site.instruction.memory
        if m is None or not m.plain_load or m.width not in (32, 64):
            continue
        by_root.setdefault((next(iter(r)), m.width), []).append(o)
    out = []
    for (_, width), offs in sorted(by_root.items()):
        per_record = RECORD_BYTES * 8 // width
        offs = sorted(offs)
        for i in range(0, len(offs), per_record):
            if len(offs[i:i + per_record]) >= 2:
                out.append(tuple(offs[i:i + per_record]))
    return tuple(out)


@dataclass(frozen=True)
class Probe:
    """What the fieldgather probe measured: the least DRAM share its DRAM-resident gathers ran at."""

    gather_dram_pct: float


@lru_cache(maxsize=None)
def probe(device_name: str) -> Probe | None:
    """The gather probe's rows under a device name of ``coalescing.json`` (a kernel's:
    ``coalescing_name(device, "fieldgather")``), or None without them."""
    rows = coalescing_devices().get(device_name, {}).get("fieldgather") or []
    dram = [r["dram_pct"] for r in rows if r["foot"] == "dram" and r.get("dram_pct")]
    return Probe(gather_dram_pct=min(dram)) if dram else None


def _thread_bytes(ctx: KernelContext, offset: int, threads: int, looped: frozenset[int]) -> float | None:
    """Bytes one global access moves for the launch: lanes executed x width (ncu's counts), else
    threads x width for an access outside loops; None when neither is known."""
    site = ctx.site(offset)
    width = site.instruction.memory.width / 8
    p = ctx.pcs.get(offset)
    if p is not None and p.thread_executed:
        return p.thread_executed / max(1, len(ctx.kernel.launches)) * width
    if offset in looped:
        return None
    return threads * width


@kernel_fact
def merge_estimate(ctx: KernelContext) -> tuple[float, int] | None:
    """(speedup, gathers merged away) of merging every group of ``index_groups`` into one record
    gather, by the DRAM bytes it saves; None without groups, the probe's table, the kernel's DRAM
    bytes and launch, or when the kernel's DRAM runs below the probe's gathers (it does not hold the
    time; a share borrowed from a device of the same chip is converted to this one's peak) or other
    accesses' bytes are not known."""
    tp = ctx.kernel.throughput
    table = probe(coalescing_name(ctx.device, "fieldgather"))
    if table is None or tp is None or not tp.dram_bytes or ctx.launch is None:
        return None
    from .coalescing import borrowed_share_scale     # coalescing imports this module
    least = table.gather_dram_pct * borrowed_share_scale(ctx, "fieldgather")   # another device's: its bytes per second
    if (tp.pct("dram") or 0.0) < least:
        return None
    # the groups last: finding them walks every instruction (gather_roots), and a profile without
    # the kernel's DRAM throughput (CUPTI's) or a DRAM that does not hold the time needs none
    groups = index_groups(ctx)
    if not groups:
        return None
    g, b = ctx.launch.grid, ctx.launch.block
    threads = g[0] * g[1] * g[2] * b[0] * b[1] * b[2]
    all_gathers = gathers(ctx)
    looped = frozenset(fb.function.instructions[i].offset for fb in ctx.blames
                       for lp in ctx.loops.get(fb.function.name, ()) for i in lp.instructions)
    other = 0.0
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            if _global(ins) and ins.offset not in all_gathers:
                n = _thread_bytes(ctx, ins.offset, threads, looped)
                if n is None:
                    return None
                other += n
    gather_bytes = tp.dram_bytes - other
    if gather_bytes <= 0:
        return None
    per_gather = gather_bytes / len(all_gathers)
    saved_gathers = sum(len(grp) - 1 for grp in groups)
    after = tp.dram_bytes - per_gather * saved_gathers
    return tp.dram_bytes / after, saved_gathers
