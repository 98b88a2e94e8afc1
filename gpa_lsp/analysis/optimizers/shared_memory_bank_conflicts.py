"""Shared Memory Bank Conflicts: shared accesses that replay, and the MIO queue they fill.

What the counters say: Nsight Compute's per-instruction "L1 Conflicts Shared
N-Way" (``PCStats.bank_conflicts``) is the *degree* N of the conflict, 1 when
a warp's lanes hit distinct banks, 32 when they all hit one bank. An N-way
access takes N wavefronts instead of 1, so (N-1)/N of its pipe time is replay.

What the stalls look like: a conflicted ``LDS`` delays its users
(``short_scoreboard`` blamed on it, class ``shared_memory``) and, because
every replay occupies the MIO pipe, fills the MIO instruction queue: warps
stall in ``mio_throttle`` on *any* instruction that goes through MIO
(shared loads and stores, ``S2R``, ...), not only on the conflicted one.

The match, with W = wavefronts per executed instruction summed over the
kernel's shared accesses (executed x N) and its other MIO instructions
(executed x 1):
* execution-dependency blame on a shared def x (N-1)/N of that def;
* every ``mio_throttle`` sample in the kernel x the replay share of the MIO
  queue, sum(executed x (N-1)) / W.
Removing the conflicts (padding, a different index) removes both: stall
elimination (Eq. 2). Without per-instruction counters (the CUPTI collector) the
conflicts come from the lanes' addresses alone and the executions from the
sampled warps' issues of each instruction (``executions``); an access whose
addresses the SASS does not give is not matched there.

Why the replays are counted from the addresses: ncu's N is wavefronts / executed
warp instructions, rounded, and warps predicated off execute the instruction with
no wavefront (benchmarks/banks: N = 2 for a 32-way access that one warp of 16
runs). Where every warp's lanes and addresses are known from the SASS
(``sass.lanes``), the wavefronts and the ideal (one per warp with an active lane
and 128 bytes) come from them, so a tree's upper levels replay 31 of 32, not 1 of 2.

Why barrier waits: the other warps of the block wait at the next barrier for the
warp whose accesses replay (benchmarks/banks: 0.092 ms against 0.035 ms padded
with one warp of 16 running a 32-way access), so the synchronization samples after
a phase are matched x the share of the phase's samples its replays cost.
"""

from __future__ import annotations

from ...sass.opcodes import MIO_OTHER
from ...sass import defuse
from ...sass.lanes import SharedAccess, shared_accesses
from ...sass.patterns import last_barriers
from ...profile.reasons import category as reason_category
from ..blame import BlameEdge
from ..context import kernel_fact
from .base import Match, Optimizer, match_edges, edge_sums
from .shared import mio_throttle_share



def conflict_ways(pc) -> float:
    """N of an N-way conflict (1 = none); 0 when the counter is absent."""
    if pc is None or not pc.bank_conflicts:
        return 0.0
    return float(max(1, pc.bank_conflicts))


@kernel_fact
def counted_accesses(ctx) -> dict[int, SharedAccess]:
    """Offset -> the wavefronts of a shared access counted from its lanes' addresses
    (``sass.lanes``) for one block of the launch, where every warp's address is known."""
    if ctx.launch is None or not ctx.launch.block:
        return {}
    out: dict[int, SharedAccess] = {}
    for fb in ctx.blames:
        fn = fb.function
        headers = {lp.header_offset: frozenset(d for k in lp.instructions for d in fn.instructions[k].dsts)
                   for lp in ctx.loops.get(fn.name, ())}
        try:
            counted = shared_accesses(fn, tuple(ctx.launch.block), headers)
        except (ValueError, IndexError, KeyError, ZeroDivisionError):   # SASS this evaluator misreads:
            counted = {}                                                 # ncu's N stays the measure
        for off, acc in counted.items():
            if acc is not None and acc.wavefronts > 0:
                out[off] = acc
    return out


def wavefronts_per_execution(ctx, off: int, pc) -> tuple[float, float]:
    """(wavefronts, ideal wavefronts) per executed warp instruction of a shared access.

    ncu's "L1 Conflicts Shared N-Way" is wavefronts / executed (rounded): warps predicated off
    execute the instruction with no wavefront, so ``N - 1`` understates the replays of the warps
    that do run it (benchmarks/banks: N = 2 for a 32-way access one warp of 16 runs). Where the
    lanes' addresses are known (``counted_accesses``) both come from them; else N and 1."""
    acc = counted_accesses(ctx).get(off)
    if acc is not None:
        return acc.wavefronts / acc.warps, acc.ideal / acc.warps
    n = conflict_ways(pc)
    return (n, 1.0) if n else (0.0, 0.0)


def conflict_share(pc, ctx=None, off: int | None = None) -> float:
    """Share of a shared access's wavefronts that are replays: (N-1)/N, or counted from the
    addresses (``wavefronts_per_execution``) when the context is given."""
    if ctx is not None and off is not None:
        w, ideal = wavefronts_per_execution(ctx, off, pc)
        return max(0.0, w - ideal) / w if w > 0 else 0.0
    n = conflict_ways(pc)
    return (n - 1.0) / n if n > 1 else 0.0


def executions(ctx, off: int, pc) -> float:
    """How often an instruction ran, as a relative weight: ncu's executed count; in a bundle without
    counts (CUPTI), the sampled warps' issues of it (``selected`` samples: one issue cycle per
    execution)."""
    if pc is None:
        return 0.0
    if pc.executed is not None:
        return float(pc.executed)
    return float(ctx.selected_at.get(off, 0))


@kernel_fact
def mio_replay_share(ctx) -> float:
    """Share of the kernel's MIO wavefronts that are bank-conflict replays."""
    replay = total = 0.0
    for off, pc in ctx.pcs.items():
        site = ctx.site(off)
        if site is None:
            continue
        ins = site.instruction
        shared = defuse.memory_space(ins) == "shared"
        if not shared and ins.base_opcode not in MIO_OTHER:
            continue        # counts in neither sum
        n = executions(ctx, off, pc)
        if not n:
            continue
        if shared:
            w, ideal = wavefronts_per_execution(ctx, off, pc)
            if not w:
                w = ideal = 1.0
            total += n * w
            replay += n * max(0.0, w - ideal)
        elif ins.base_opcode in MIO_OTHER:
            total += n
    return replay / total if total > 0 else 0.0


class SharedMemoryBankConflicts(Optimizer):
    id = "shared_memory_bank_conflicts"
    keeps = ("dram", "l2")   # shared memory is served by the L1 unit: only its work changes
    title = "Shared Memory Bank Conflicts"
    suggestion = ("Shared-memory accesses conflict on banks and replay, which also fills the MIO queue "
                  "(mio_throttle). Pad the array (e.g. [32][33]) or change the index so that a warp's lanes "
                  "hit distinct banks.")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        # the execution-dependency edges on shared-memory defs, in edges order (edges_where's index)
        direct = match_edges(ctx.edges_where(reasons=("execution_dependency",), categories=("shared_memory",)),
                             lambda e: conflict_share(pcs.get(e.def_), ctx, e.def_))
        edges = list(direct.edges) if direct else []
        edges += _queue_edges(ctx)
        edges += _barrier_edges(ctx, edges)
        if not edges:
            return None
        return Match(tuple(edges), *edge_sums(edges))


def _queue_edges(ctx) -> list[BlameEdge]:
    """``mio_throttle`` samples x the replay share, blamed on the conflicted accesses.

    The throttled instruction is the victim; the culprits are the replaying
    accesses, each blamed in proportion to its replay wavefronts (executed x (N-1)).
    """
    replay = mio_replay_share(ctx)
    if replay <= 0:
        return []
    culprits = []
    for off, pc in ctx.pcs.items():
        n = executions(ctx, off, pc)
        if n:
            w, ideal = wavefronts_per_execution(ctx, off, pc)
            if w > ideal:
                culprits.append((off, n * (w - ideal)))
    weight = sum(w for _, w in culprits)
    if weight <= 0:
        return []
    out = []
    for e in ctx.edges:
        if e.category != "self" or e.reason != "pipe_busy":
            continue
        pc = ctx.pcs.get(e.use)
        share = replay * mio_throttle_share(pc) if pc is not None else 0.0
        if share <= 0:
            continue
        for off, w in culprits:
            f = share * w / weight
            out.append(BlameEdge(off, e.use, e.reason, "shared_memory", e.stall * f, e.latency * f, 0))
    return out


def _barrier_edges(ctx, matched: list[BlameEdge]) -> list[BlameEdge]:
    """The waits at a barrier for the replays before it: synchronization samples x the share of the
    phase's samples (since the barrier before) that the replays cost, blamed on the phase's
    conflicted accesses.

    Why: warps that reach a barrier wait for the slowest warp of the block; when that warp's phase
    replays its shared accesses, the others wait for the replays. benchmarks/banks: with one warp of
    16 running a 32-way access between barriers, the step took 0.092 ms against 0.035 ms padded --
    the replays' time, spent by the other 15 warps at the barrier."""
    sync = ctx.edges_where(reasons=("synchronization",))
    if not sync or not matched:
        return []
    claimed: dict[int, float] = {}
    for e in matched:
        claimed[e.use] = claimed.get(e.use, 0.0) + e.stall
    phases: dict[tuple[str, int], tuple[float, list[tuple[int, float]]]] = {}
    out: list[BlameEdge] = []
    for e in sync:
        site = ctx.site(e.use)
        if site is None:
            continue
        fn = site.function
        lasts = last_barriers(fn)
        bar = lasts[site.index]
        if bar < 0:
            continue
        key = (fn.name, bar)
        if key not in phases:
            phases[key] = _phase(ctx, fn, lasts, bar, claimed)
        share, culprits = phases[key]
        weight = sum(w for _, w in culprits)
        if share <= 0 or weight <= 0:
            continue
        for off, w in culprits:
            f = share * w / weight
            out.append(BlameEdge(off, e.use, e.reason, "shared_memory", e.stall * f, e.latency * f, 0))
    return out


def _phase(ctx, fn, lasts, bar: int, claimed: dict[int, float]) -> tuple[float, list[tuple[int, float]]]:
    """(share of the phase's samples the replays cost, [(conflicted access, replay weight)]) of the
    instructions between the barrier before ``bar`` and ``bar`` (synchronization samples left out:
    they are the waits, not the phase's work)."""
    ins = fn.instructions
    end = next(k for k, i in enumerate(ins) if i.offset == bar)
    start = lasts[end - 1] if end > 0 else -1
    k0 = next((k for k, i in enumerate(ins) if i.offset == start), -1) + 1
    work = replays = 0.0
    culprits: list[tuple[int, float]] = []
    for i in ins[k0:end]:
        p = ctx.pcs.get(i.offset)
        if p is None:
            continue
        work += sum(n for r, n in p.stalls if reason_category(r) != "synchronization")
        replays += claimed.get(i.offset, 0.0)
        n = executions(ctx, i.offset, p)
        if n and defuse.memory_space(i) == "shared":
            w, ideal = wavefronts_per_execution(ctx, i.offset, p)
            if w > ideal:
                culprits.append((i.offset, n * (w - ideal)))
    return (min(1.0, replays / work) if work > 0 else 0.0), culprits
