"""Restrict Pointer: global loads through pointers the compiler cannot prove read-only.

What aliasing costs, as seen in the SASS: after every store through a pointer
that may alias an input, nvcc must load the input again. Unrolled code then
holds *reloads*: an ``LDG`` of the same address (same base registers, not
redefined, same immediate offset) as an earlier ``LDG`` with a global store in
between. ``const T* __restrict__`` lets the compiler keep the first value in
registers (and use the read-only path), so the reloads disappear.

The match, when reloads exist:
* every sample on a reload (its LG-queue throttle, issue, not-selected) and
  the memory-dependency stalls blamed on it;
* ``lg_throttle`` samples on the other loads and stores x the share of the
  LG queue's entries that are reloads (LG instructions weighted by executed
  counts when the collector has them, else one per instruction seen issuing):
  the queue is shared, a full queue stalls whoever issues next.
Estimator: stall elimination (Eq. 2), the instructions vanish.

Without reloads (loop code that reads each address once), the remaining
benefit is scheduling freedom: a load that follows a global store in program
order (in its loop body, where the back edge puts every store of the body
before the next iteration's loads) cannot be hoisted above it or batched with
the loads beyond it unless the pointers are ``__restrict__``. Only the
memory-dependency stalls on such plain (non-``.CONSTANT``) global loads are
matched, estimated by latency hiding (Eq. 3-4) as in GPA; so are loads below a
``__syncthreads()``, which only a read-only load may cross. A load that no store
or barrier precedes gains nothing: on sm_90 the read-only path and L1 are one
cache, so ``LDG.E.CONSTANT`` alone changes nothing. Measured on the H100
(benchmarks/restrict): stream 1.00x, read-only loop 1.00x, hoisting past stores
0.99x at full occupancy and 2.73x at 4 warps per SM (why the estimate is latency
hiding, which counts only stalls no other warp covered), a load after a barrier
1.99x, reloads 3.70x.

Batching (``batching``): where each load of a run waits behind a store that waits
for the load before it (``sass.batches.aliased_rounds``: one round trip per load),
hoisting overlaps the round trips: those loads' waits shrink by rounds now / rounds
after, bounded by the memory-parallelism roof. Priced only for loads the profile
shows coalesced (``batched_rounds``; benchmarks/restrict/batch_probe.cu: a coalesced
walk 8.5x, a walk of 32-line requests 1.04-1.43x, README).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..blame import BlameEdge
from ..context import kernel_fact
from ..model import Fix
from ...profile.demangle import unqualified_name
from ...sass.opcodes import CTA_BARRIERS
from ...sass.patterns import reloads
from ..sources import body_range, derived_pointers, find_function, is_written, pointer_parameters
from ..estimate import latency_hiding, stall_elimination
from ..coalescing import has_sectors, sector_excess
from ..lanewalk import WALK_EXCESS
from ..parallelism import roof
from ...sass.batches import aliased_rounds, plain_global_load
from .base import Estimator, Match, Optimizer, hottest, match_edges, edge_sums
from .shared import lg_share, queue_edges

@kernel_fact
def kernel_reloads(ctx) -> set[int]:
    """Offsets of the reloads (``sass.patterns.reloads``) in every function of the kernel."""
    found: set[int] = set()
    for fb in ctx.blames:
        found |= reloads(fb.function)
    return found


def reload_match(ctx) -> Match | None:
    """The samples reloads cost, directly and through the shared LG queue (see the module doc)."""
    found = kernel_reloads(ctx)
    if not found:
        return None
    share = lg_share(ctx, found)
    edges: list[BlameEdge] = [e for e in ctx.edges
                              if e.def_ in found and (e.category == "self" or e.category == "global_memory")]
    queued = queue_edges(ctx, found, share)
    edges += queued
    if not edges:
        return None
    return Match(tuple(edges), *edge_sums(edges),
                 data={"reloads": len(found), "queue_share": share},
                 queue_uses=frozenset(e.use for e in queued))


def _behind_a_store(ctx) -> set[int]:
    """Offsets of plain global loads that a global store or a barrier precedes in program order: in
    the same loop body (any store of the body precedes the next iteration's loads), else earlier in
    the function. Aliasing keeps a load below a store; a plain (coherent) load stays below a
    ``bar.sync``, a read-only ``.CONSTANT`` one may move above it (benchmarks/restrict ``barrier``:
    1.99x on the H100)."""
    out: set[int] = set()
    for fb in ctx.blames:
        ins = fb.function.instructions
        stores = [k for k, i in enumerate(ins)
                  if (i.memory is not None and i.memory.global_write) or i.base_opcode in CTA_BARRIERS]
        if not stores:
            continue
        first_store = stores[0]
        for k, i in enumerate(ins):
            if not plain_global_load(i):
                continue
            lp = ctx.loop_of(i.offset)
            if lp is not None:
                if any(s in lp.instructions for s in stores):
                    out.add(i.offset)
            elif k > first_store:
                out.add(i.offset)
    return out


@kernel_fact
def batched_rounds(ctx) -> dict[int, float]:
    """Load offset -> the factor by which hoisting above aliasing stores divides its waits
    (``sass.batches.aliased_rounds``), for loads whose requests the profile shows coalesced.

    Why only those: benchmarks/restrict/batch_probe.cu (H200) hoisted 16 serialized loads into one
    or two rounds in three walks. A coalesced column walk (4 sectors a request) ran 8.5x faster at
    every occupancy it was given; a thread-per-row walk (32 sectors a request) 1.04-1.43x at 4-64
    warps per SM, its L2 at 52-86% of peak both ways (every 4-byte store a sector of its own), and
    the same walk with a cached re-read pass 0.99-1.39x. A request on 32 lines already has 32 lines
    in flight; how much more the memory system takes from it is not in the profile. A load counts as
    coalesced when it moves less than twice its ideal sectors (``lanewalk.WALK_EXCESS``, the test a
    per-lane walk fails); without sector counts (CUPTI's PC sampling) nothing is priced."""
    if not has_sectors(ctx):
        return {}
    out: dict[int, float] = {}
    for fb in ctx.blames:
        for off, k in aliased_rounds(fb.function).items():
            if sector_excess(ctx, off) < WALK_EXCESS:
                out[off] = k
    return out


def batching(ctx, match: Match, batched: dict[int, float]) -> float:
    """Batched round trips overlap: the waits on a load of a run with ``k`` rounds now and one
    after shrink to 1/k of themselves (the round trips of one batch overlap, waits with waits);
    the other matched loads keep GPA's latency hiding. Bounded by the memory-parallelism roof at
    factor 1 (``RestrictPointer.mlp_factor_for``) and by DRAM's headroom (``keeps``)."""
    saved = rest = 0.0
    for e in match.edges:
        k = batched.get(e.def_)
        if k:
            saved += e.latency * (1.0 - 1.0 / k)
        else:
            rest += e.latency
    total = ctx.total
    hidden = min(ctx.active, rest, total / 2.0) if rest > 0 else 0.0
    return stall_elimination(total, saved + hidden)


class RestrictPointer(Optimizer):
    id = "restrict_pointer"
    keeps = ("dram",)   # reloads of data just loaded hit L1 or L2, not DRAM
    mlp_factor = None   # reloads: deleted, the DRAM traffic stays (no roof)

    title = "Restrict Pointer"
    method = Estimator.latency_hiding
    suggestion = ("Loads go through a pointer that may alias the kernel's stores, so the compiler neither uses "
                  "the read-only path nor moves loads earlier. Declare read-only inputs `const T* __restrict__`.")

    def match(self, ctx) -> Match | None:
        got = reload_match(ctx)
        if got is not None:
            return got

        blocked = _behind_a_store(ctx)

        def keep(e):
            s = ctx.site(e.def_)
            return s is not None and plain_global_load(s.instruction) and e.def_ in blocked
        m = match_edges(ctx.edges_where(categories=("global_memory",)), keep)
        if m is None:
            return None
        rounds = batched_rounds(ctx)
        batched = {e.def_: rounds[e.def_] for e in m.edges if e.def_ in rounds}
        if batched and roof(ctx) is not None:
            return replace(m, data={"batched": batched})
        return m

    def method_for(self, match: Match) -> Estimator:
        return Estimator.stall_elimination if "reloads" in match.data else Estimator.latency_hiding

    def mlp_factor_for(self, match: Match | None) -> float | None:
        """Without reloads the gain is batching. Loads aliasing serializes (``batched``) are already
        counted in flight together by the roof (``parallelism.level_bytes`` groups loads by their
        address chains only), which the fix makes true: factor 1. Other loads behind a store: nvcc
        unrolls by 4, which raises the bytes in flight like unrolling does; when DRAM already runs
        at what the loads in flight can pull (Little's law, analysis/parallelism.py), batching buys
        nothing (benchmarks/restrict: hoisting 0.99x at full occupancy, 2.73x at 4 warps/SM)."""
        if match is None or "reloads" in match.data:
            return None
        return 1.0 if "batched" in match.data else 4.0

    def explained_throttle(self, ctx) -> dict[int, float]:
        """The memory-throttle samples that the reloads explain: on them and on the queue they fill."""
        m = reload_match(ctx)
        return m.throttle_by_use() if m is not None else {}

    def estimate(self, ctx, match: Match) -> float:
        if "reloads" in match.data:
            return stall_elimination(ctx.total, match.samples)
        batched = match.data.get("batched")
        if batched:
            return batching(ctx, match, batched)
        return latency_hiding(ctx.total, match.latency, ctx.active)

    def fix(self, ctx, match: Match) -> Fix | None:
        entry = ctx.entry
        name = unqualified_name(entry.demangled or entry.name)
        loc = next((i.loc for i in entry.instructions if i.loc), None)
        if loc is None:
            return None
        lines = ctx.reader(loc.file)
        if lines is None:
            return None
        def_line = find_function(lines, name)
        if def_line is None:
            return None
        first, last = body_range(lines, def_line)
        params = pointer_parameters(lines, def_line)
        hot_lines = []
        for off, _ in hottest(match.edges):
            l = ctx.location(off)
            if l is not None and l.file == loc.file:
                hot_lines.append(l.line)
        named = []
        for pname, decl in params:
            if "__restrict__" in decl and "const" in decl:
                continue
            if is_written(lines, pname, first, last):
                continue
            # the hot loads may read through a local view of the parameter (``x = in + r * cols``)
            names = (pname, *derived_pointers(lines, pname, first, last))
            used = any(re.search(r"\b" + re.escape(n) + r"\b", lines[h - 1])
                       for n in names for h in hot_lines if 0 < h <= len(lines))
            if used:
                named.append(pname)
        if not named:
            return None
        # every read-only pointer the evidence names; "parameter" (the first) for older readers
        return Fix("restrict", loc.file, def_line, {"function": name, "parameter": named[0], "parameters": named})

