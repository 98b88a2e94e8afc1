"""Warp Balance: synchronization stalls (warps wait at barriers for the slowest one).

Why samples move to the barrier: a warp released by (or waiting in) a
``BAR.SYNC`` is often sampled on the instruction after it, with the barrier
reason. The fix concerns the barrier, so a synchronization sample on a
non-barrier instruction is matched to the nearest barrier before it in the
same function (when there is one).

Why a shared-memory tree is matched whole: when a function updates shared
memory in place between barriers (``LDS [a]`` -> arithmetic -> ``STS [a]``, the
step of a tree reduction or scan), the barriers exist to pass values between
threads through shared memory. The fix this advice names (warp shuffles, one
barrier for many reductions) removes that traffic with the barriers: the
shared loads and stores between barriers, their MIO-queue throttle and waits,
and the consumers' waits on the shared loads all go, not only the barrier
stalls. So in such a function the match also claims every sample at a shared
access that lies between two barriers, and every stall blamed on one. A
function whose shared accesses are not updated in place (a transpose, a
stencil reading one array and writing another) keeps the barrier-only match.
The tree's samples are shown at the barrier before each access, as the barrier
stalls are: the advice is about the barrier-separated exchange, not one access.

Why some barriers' waits are not claimed: warps wait at a barrier for the last
one to arrive. When the code before the barrier publishes a value it has just
loaded from global memory (``LDG r`` then ``STS``/``STG`` of ``r``: a tile
filled from the input, a child index read from a tree node), the last warp is
late because that load is in flight, and every warp needs the value: fewer or
cheaper barriers leave the wait, it is the load's latency (Code Reordering's
and the memory advice's business). btree_search showed it: 0.44 of the time
claimed, 0.08 vanished. The exception is a round trip: a load of an address the
block itself stored earlier (thread 0 copying ``offset[bid]`` to ``curr[bid]``
between two barriers): passing the value in shared memory or registers removes
the load, so that wait is claimed, and so is everything the round-trip loads
cost (their own samples and the waits blamed on them), shown at the barrier
before them.
"""

from __future__ import annotations

from ...sass.opcodes import SHARED_LOADS, SHARED_STORES, WAIT_BARRIERS
from ...sass.operands import address_registers, memory_operand
from ...sass.patterns import last_barriers, latency_barriers, round_trips
from ..blame import BlameEdge
from ..context import kernel_fact
from ..deletion import vanishing_edges
from .base import Match, Optimizer, edge_sums

WINDOW = 8           # instructions searched back from a shared store for its in-place combine


def _by_name(function) -> str:
    return function.name


def _barrier_before(ctx, offset: int) -> int:
    site = ctx.site(offset)
    if site is None:
        return offset
    found = last_barriers(site.function)[site.index]
    return offset if found < 0 else found


def _in_place_combine(ins, k: int) -> bool:
    """Is shared store ``ins[k]`` fed (through one ALU op) by a shared load of the same address?"""
    st = ins[k]
    addr = memory_operand(st.operands)
    if addr is None:
        return False
    data = set(st.srcs) - address_registers(addr)
    feeding: set[str] = set(data)
    for j in range(k - 1, max(-1, k - 1 - WINDOW), -1):
        i = ins[j]
        if i.base_opcode in WAIT_BARRIERS:
            break
        if i.dsts & feeding:
            if i.base_opcode in SHARED_LOADS:
                if memory_operand(i.operands) == addr:
                    return True
                continue
            feeding |= set(i.srcs)
    return False


@kernel_fact(key=_by_name)
def shared_tree(ctx, function) -> frozenset[int]:
    """Offsets of the shared accesses between barriers in a function that updates shared memory in
    place across barriers (empty when it does not)."""
    ins = function.instructions
    bars = [k for k, i in enumerate(ins) if i.base_opcode in WAIT_BARRIERS]
    out: frozenset[int] = frozenset()
    if bars and any(i.base_opcode in SHARED_STORES and _in_place_combine(ins, k) for k, i in enumerate(ins)):
        lo, hi = bars[0], bars[-1]
        loops = ctx.loops.get(function.name, ())
        barrier_loops = [lp for lp in loops if any(b in lp.instructions for b in bars)]

        def between(k: int) -> bool:
            return lo < k < hi or any(k in lp.instructions for lp in barrier_loops)

        out = frozenset(i.offset for k, i in enumerate(ins)
                        if i.base_opcode in SHARED_LOADS | SHARED_STORES and between(k))
    return out


class WarpBalance(Optimizer):
    id = "warp_balance"
    keeps = ("dram", "l2")   # shuffles instead of a shared-memory tree change the L1 unit's work
    title = "Warp Balance"
    suggestion = ("Warps wait at a barrier. Balance the work before __syncthreads, use warp shuffles instead "
                  "of shared-memory reductions, keep several reductions in flight per barrier, or split "
                  "arrive and wait (cuda::barrier).")

    def match(self, ctx) -> Match | None:
        sync = ctx.edges_where(reasons=("synchronization",))
        if not sync:
            return None
        tree: set[int] = set()
        waits_on_loads: set[int] = set()
        for fb in ctx.blames:
            tree |= shared_tree(ctx, fb.function)
            tree |= round_trips(fb.function)
            waits_on_loads |= latency_barriers(fb.function)
        new = tuple.__new__     # e._replace(def_=...) without its Python-level frames (10^4 sync edges)
        out = [m for m in (new(BlameEdge, (_barrier_before(ctx, e[0]),) + e[1:]) for e in sync)
               if m.def_ not in waits_on_loads]
        if not out and not tree:
            return None
        # the tree's own accesses (all their samples) and the waits on its loads
        # (shown at the barrier before them, like the barrier stalls: the advice is the exchange's)
        if tree:
            on_tree = [e for e in ctx.edges if e.def_ in tree]
            # and what goes with the accesses: waits at them, their address arithmetic
            gone = [e for e in on_tree if e.reason != "synchronization"]
            gone += vanishing_edges(ctx, frozenset(tree), on_tree)
            out += [new(BlameEdge, (_barrier_before(ctx, e[0]),) + e[1:]) for e in gone]
        return Match(tuple(out), *edge_sums(out))
