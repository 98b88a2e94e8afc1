"""What more than one optimizer needs, in one module: an optimizer imports only ``base`` and this.

Each part is a fact of the kernel (or a rule about a queue of the SM) that two or more fixes reason
about; the optimizer that uses it alone keeps it in its own file.

* The SM's shared queues. The LSU's local/global (LG) queue is shared by every global and local
  access of an SM partition: when it is full, whoever issues the next LG instruction stalls
  (``lg_throttle``), whether or not its own access is the cause. A change that deletes a class of
  LG instructions (aliasing reloads, register spills, a local array) frees its share of the
  queue's entries, so the ``lg_throttle`` samples on the *other* LG instructions shrink by that
  share: the same rule as Coalescing's and Bank Conflicts' share of the MIO queue
  (docs/optimizers.md).
* Sectors: the excess of an uncoalesced access and the ``drain`` samples its stores cause
  (Global Memory Coalescing claims them, Memory Transaction Reduction leaves them out).
* Local accesses: spills (Register Reuse) or a local array (Local Array), and every sample a class
  of them costs. Which local accesses are spills: ``sass.patterns.is_spill``.
* The CUDA math library's code (Fast Math; Function Inlining leaves it alone).
* Instruction fetch: the estimate of Loop No-Unroll and Function Split.
* The launch's block size (Thread Increase, Block Increase).
"""

from __future__ import annotations

import re
from operator import itemgetter

from ...profile.demangle import unqualified_name
from ...sass.opcodes import GLOBAL_WRITES
from ...sass.patterns import is_local, is_spill
from ..blame import BlameEdge
from ..context import kernel_fact
from ..deletion import vanishing_edges
from ..estimate import stall_elimination
from ..model import Fix
from ..sources import launch_sites
from .base import Match, match_edges, reason_share, edge_sums


# --- the LG and MIO queues -------------------------------------------------------------------
def is_lg(ins) -> bool:
    sp = ins.memory.space if ins.memory is not None else None
    return sp in ("global", "generic", "local")


@kernel_fact(key=frozenset)
def lg_share(ctx, members: set[int] | frozenset[int]) -> float:
    """The share of the LG queue's entries that ``members`` (offsets) make: LG instructions weighted
    by executed counts when the collector has them, else one per instruction seen issuing."""
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
    return mine / lg if lg > 0 else 0.0


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

def mio_throttle_share(pc) -> float:
    """Share of a PC's pipe-busy samples (the GPA category) that are ``mio_throttle``."""
    return reason_share(pc, "mio_throttle", ("mio_throttle", "math_pipe_throttle", "dispatch_stall"))


# --- sectors ---------------------------------------------------------------------------------
DRAIN = "drain"


def _is_store(ctx, offset: int) -> bool:
    site = ctx.site(offset)
    if site is None:
        return False
    op = site.instruction.opcode.split(".")[0]
    return op in GLOBAL_WRITES


_REASON = itemgetter(0)


@kernel_fact
def drain_edges(ctx) -> list[BlameEdge]:
    """``drain`` samples (waiting at exit for stores to complete) shared over the global stores by sectors."""
    drains = [(o, p.stall_dict().get(DRAIN, 0), p.not_issued_dict().get(DRAIN, 0)) for o, p in ctx.pcs.items()
              if DRAIN in map(_REASON, p.stalls)]         # any(r == DRAIN ...), without a generator per PC
    drains = [d for d in drains if d[1] > 0]
    stores = [(o, p.sectors) for o, p in ctx.pcs.items() if p.sectors and _is_store(ctx, o)]
    out: list[BlameEdge] = []
    total_sectors = sum(s for _, s in stores)
    if drains and total_sectors:
        for use, n, lat in drains:
            for st, sec in stores:
                w = sec / total_sectors
                out.append(BlameEdge(st, use, "memory_throttle", "global_memory", n * w, lat * w, 0))
    return out


# --- local accesses: spills and local arrays -------------------------------------------------
@kernel_fact
def local_kinds(ctx) -> dict[int, str]:
    """Offset -> ``"spill"`` or ``"array"`` for every local access of the kernel's functions."""
    out: dict[int, str] = {}
    for fb in ctx.blames:
        for i in fb.function.instructions:
            if not is_local(i) or i.offset in out:      # i is its site's instruction (offsets are unique)
                continue
            site = ctx.site(i.offset)
            if site is not None:
                out[i.offset] = "spill" if is_spill(site.instruction, site.function) else "array"
    return out


@kernel_fact
def local_cost(ctx, spill: bool) -> Match | None:
    """Edges of every sample a class of local accesses (spills, or the rest) costs.

    Blame on the access (RAW on loads, WAR on stores) plus self samples on the
    access of any reason: the instruction disappears with the fix. A fact of the kernel: Register
    Reuse, Local Array and Memory Transaction Reduction all ask for it.
    """
    kinds = local_kinds(ctx)

    def kind(off: int) -> str:
        return kinds.get(off, "none")

    want = "spill" if spill else "array"
    if want not in kinds.values():
        return None     # no such access: keep is False for every edge

    def keep(e):
        return kind(e.def_) == want
    got = match_edges(ctx.edges_where(categories=_LOCAL_COST_CATEGORIES), keep)
    if got is not None:
        # what goes with the accesses: waits at them, their address arithmetic (analysis/deletion.py)
        deleted = frozenset(i.offset for fb in ctx.blames for i in fb.function.instructions
                            if kind(i.offset) == want)
        gone = vanishing_edges(ctx, deleted, got.edges)
        # the accesses' share of the LG queue: other loads and stores throttled behind them
        members = frozenset(o for o in deleted if o in ctx.pcs)
        extra = queue_edges(ctx, members, lg_share(ctx, members))
        if extra or gone:
            edges = got.edges + tuple(gone) + tuple(extra)
            got = Match(edges, *edge_sums(edges),
                        queue_uses=frozenset(e.use for e in extra))
    return got


_LOCAL_COST_CATEGORIES = ("local_memory", "write_after_read", "self")


# --- the math library ------------------------------------------------------------------------
_MATH_FN = re.compile(r"internal|__cuda_sm\d+x?_|__nv_|slowpath|rcp_|div_rn|sqrt_rn|trig_reduction", re.I)
_MATH_HEADER = re.compile(r"(math_functions|device_functions|crt/|cuda_fp|sm_\d+_intrinsics)", re.I)


@kernel_fact
def math_library_offsets(ctx) -> frozenset[int]:
    """Offsets of the kernel's instructions in CUDA's math library: in a device function of it, or
    code from one of its headers.

    A fact of the kernel, decided once per function and per file: Fast Math asks per use and
    Function Inlining per edge, and two regular expressions per ask were a good part of their
    time on a large kernel."""
    by_file: dict[str, bool] = {}
    out = set()
    for fb in ctx.blames:
        f = fb.function     # each offset's site is in its own function (offsets are unique in a section)
        if not f.entry and _MATH_FN.search(f.name):
            out.update(i.offset for i in f.instructions)
            continue
        for i in f.instructions:
            loc = i.loc
            if loc is not None:
                lib = by_file.get(loc.file)
                if lib is None:
                    lib = by_file[loc.file] = bool(_MATH_HEADER.search(loc.file))
                if lib:
                    out.add(i.offset)
    return frozenset(out)


# --- instruction fetch -----------------------------------------------------------------------
def fetch_stall_elimination(ctx, match: Match) -> float:
    """Stall elimination (Eq. 2) of the fetch stalls during which the scheduler issued nothing.

    Warps that stall on the same missing instruction wait for one fetch; while
    some other warp issues, their wait costs no issue slot. Only the latency
    (not-issued) samples are cycles the scheduler lost to instruction fetch,
    so only those come back when the code fits the cache.
    """
    return stall_elimination(ctx.total, match.latency)


# --- the launch ------------------------------------------------------------------------------
def block_size_fix(ctx, *, smaller: bool = False) -> Fix | None:
    entry = ctx.entry
    name = unqualified_name(entry.demangled or entry.name)
    files = []
    for ins in entry.instructions:
        if ins.loc and ins.loc.file not in files:
            files.append(ins.loc.file)
    for f in files:
        lines = ctx.reader(f)
        if lines is None:
            continue
        for site in launch_sites(f, lines, name):
            cur = site.current
            if smaller:
                new = max(32, cur // 2) if cur > 128 else cur
            else:
                new = max(128, cur * 2) if cur < 128 else min(ctx.device.max_threads_per_block, cur * 2)
            if new != cur:
                return Fix("block_size", f, site.line, {"size": new, "current": cur,
                                                        "columns": list(site.columns), "dims": list(site.dims)})
    return None
