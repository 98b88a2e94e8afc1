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
elimination (Eq. 2). Without per-instruction counters (the CUPTI collector)
the conflict degree is unknown and nothing is matched.
"""

from __future__ import annotations

from ...sass.opcodes import MIO_OTHER
from ...sass import defuse
from ..blame import BlameEdge
from ..context import kernel_fact
from .base import Match, Optimizer, match_edges
from .shared import mio_throttle_share



def conflict_ways(pc) -> float:
    """N of an N-way conflict (1 = none); 0 when the counter is absent."""
    if pc is None or not pc.bank_conflicts:
        return 0.0
    return float(max(1, pc.bank_conflicts))


def conflict_share(pc) -> float:
    """Share of a shared access's wavefronts that are replays: (N-1)/N."""
    n = conflict_ways(pc)
    return (n - 1.0) / n if n > 1 else 0.0


@kernel_fact
def mio_replay_share(ctx) -> float:
    """Share of the kernel's MIO wavefronts that are bank-conflict replays (needs executed counts)."""
    replay = total = 0.0
    for off, pc in ctx.pcs.items():
        if not pc.executed:
            continue
        site = ctx.site(off)
        if site is None:
            continue
        ins = site.instruction
        if defuse.memory_space(ins) == "shared":
            n = conflict_ways(pc) or 1.0
            total += pc.executed * n
            replay += pc.executed * (n - 1.0)
        elif ins.base_opcode in MIO_OTHER:
            total += pc.executed
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
        direct = match_edges(ctx.edges, lambda e: e.category == "shared_memory"
                             and e.reason == "execution_dependency" and conflict_share(pcs.get(e.def_)))
        edges = list(direct.edges) if direct else []
        edges += _queue_edges(ctx)
        if not edges:
            return None
        return Match(tuple(edges), sum(e.stall for e in edges), sum(e.latency for e in edges))


def _queue_edges(ctx) -> list[BlameEdge]:
    """``mio_throttle`` samples x the replay share, blamed on the conflicted accesses.

    The throttled instruction is the victim; the culprits are the replaying
    accesses, each blamed in proportion to its replay wavefronts (executed x (N-1)).
    """
    replay = mio_replay_share(ctx)
    if replay <= 0:
        return []
    culprits = [(off, pc.executed * (conflict_ways(pc) - 1.0)) for off, pc in ctx.pcs.items()
                if pc.executed and conflict_ways(pc) > 1]
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
