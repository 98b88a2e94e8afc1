"""Global Memory Coalescing: memory samples caused by accesses that fetch more sectors than they use.

Why the match is wider than the blamed memory-dependency stalls: an uncoalesced
access costs time in three places, and each scales with the sectors it moves.
(1) Its consumers wait on it (memory-dependency stalls blamed on it). (2) It
waits itself to enter the memory pipeline (lg/mio throttle samples *at* the
load or store: the LSU queue is full of its own excess requests). (3) Its
stores must drain before the warp exits: ``drain`` samples sit on the
instruction after EXIT, so they are shared over the kernel's global stores in
proportion to their sectors. Coalescing keeps only ``ideal/sectors`` of those
transfers, so the matched samples are each part times ``1 - ideal/sectors``
(GPA: stall elimination of blame x (1 - efficiency)).

(4) The excess requests also sit in the MIO queue that the SM shares between
the LSU's global/local instructions and the other queue-served instructions
(shared accesses, ``S2R`` special-register reads, shuffles). While it is full of
excess sectors, those others wait too: ``mio_throttle`` on them, and their
consumers' short-scoreboard waits on them. Coalescing frees the queue by
the excess sectors' share of its traffic, so those samples are matched x
``excess sectors / (all global sectors + other MIO instructions executed)``
(the same rule as bank conflicts' replay share of the queue).

The estimate and its bound follow the per-unit roof model of ``analysis/coalescing.py``
(measured on the device by benchmarks/coalescing): the matched-stall estimate above, or, where
the kernel is held by the unit whose work coalescing removes, Eq. 2 on that unit's busy time,
whichever is larger; then at most what every unit's remaining work allows at the share of peak
it can reach. Without the device's table or the kernel's unit throughput, the matched-stall
estimate alone.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ...sass.opcodes import MIO_OTHER, SHARED_ACCESSES
from ..blame import BlameEdge
from ..coalescing import has_sectors, ideal_sectors, remappable_excess
from ..coalescing import model_at, transposed_accesses
from ..context import kernel_fact
from ..copywalk import copy_walk_estimate
from .. import rowwarp
from ..lanewalk import LONG_ROWS, fetched_row_bytes, idle_lane_cap, rewalked_bytes, rewrite_spread, walk
from .base import Match, Optimizer, edge_sums
from .shared import DRAIN, drain_edges, mio_throttle_share


@kernel_fact
def queue_excess_share(ctx) -> float:
    """The excess global sectors' share of the MIO queue's traffic (0 without sector counts)."""
    sectors = excess_sectors = other = 0.0
    for o, p in ctx.pcs.items():
        if p.sectors and p.ideal_sectors is not None:
            sectors += p.sectors
            excess_sectors += max(0.0, p.sectors - ideal_sectors(ctx, o))
            continue
        site = ctx.site(o)
        if site is not None and p.executed and site.instruction.base_opcode in MIO_OTHER | SHARED_ACCESSES:
            other += p.executed
    return excess_sectors / (sectors + other) if sectors + other > 0 else 0.0


ONE_LENGTH = 0.95     # lanes active at a walk's steps above which its rows are of one length (the probes')

# the bounds of a memory stream, and which rows of the row-warp probe price them (analysis/rowwarp.py):
# the probe read its rows from DRAM and from the L2, so a bound by the L2's requests ("l2") is priced
# by its L2 rows as the resident stream is
STREAM_BOUNDS = {"dram": "dram", "mlp": "dram", "resident": "l2", "l2": "l2"}


@kernel_fact
def unit_model(ctx):
    """The unit model of the coalesced code, on the SMs its rewrite fills (``rewrite_spread``); where
    the rewrite is a warp per row (a per-lane walk of ``LONG_ROWS`` elements or more) and a memory
    stream bounds it, that bound at the share of the stream's rate a warp per row of the walk's row
    reaches (analysis/rowwarp.py)."""
    m = model_at(ctx, rewrite_spread(ctx), rewalked_bytes(ctx))
    where = STREAM_BOUNDS.get(m.bound_unit) if m is not None else None
    w = walk(ctx) if where else None
    if w is None or w.elements_per_lane < LONG_ROWS:
        return m
    e = rowwarp.efficiency(ctx.device, fetched_row_bytes(ctx), where)
    if e is None or e >= 1.0:
        return m
    return replace(m, bound=max(1.0, m.bound * e), extra={**m.extra, "rowwarp": e})


def _with_unit_models(ctx, est: float) -> float:
    """The matched-stall estimate ``est``, the unit model's, or, for a per-lane copy walk no unit
    holds, the copywalk probe's coalesced copy (analysis/copywalk.py, at most the unit bound),
    whichever is largest."""
    m = unit_model(ctx)
    if m is None:
        return est
    est = max(est, m.unit_estimate)
    cw = copy_walk_estimate(ctx, m)
    return max(est, min(cw, m.bound)) if cw is not None else est


def streaming_rewrite(ctx) -> float | None:
    """For a per-lane walk that no unit holds (the unit model's estimate is 1: a chain of round trips
    sets the time, each a request of up to 32 lines) over rows of one length and ``LONG_ROWS``
    elements or more: the unit model's bound, which the warp-per-row rewrite reaches, since each of
    its requests is one line and its rows stream (analysis/rowwarp.py prices what short rows lose);
    None otherwise. Calibration minmax_scale_rows: a thread per 384-float row walked twice, 12.5x
    for a warp per row against 7.7x from the matched stalls. docs/optimizers.md ("A latency-bound
    walk streams once a warp reads each row")."""
    m = unit_model(ctx)
    w = walk(ctx)
    if m is None or m.unit_estimate > 1.0 or w is None or w.gather or w.elements_per_lane < LONG_ROWS \
            or w.lanes_active < ONE_LENGTH:
        return None
    return m.bound


def _global(pc) -> bool:
    return pc is not None and bool(pc.sectors)

MEMORY_REASONS = ("memory_dependency", "memory_throttle", "pipe_busy")


def coalescing_weight(ctx, e: BlameEdge) -> float:
    """The share of edge ``e`` that coalescing its def would remove (0 when the def is coalesced or
    a gather: analysis/gathers.py)."""
    if e.reason not in MEMORY_REASONS:
        return 0.0
    return remappable_excess(ctx, e.def_)


def queue_weight(ctx, e: BlameEdge) -> float:
    """The share of a non-global edge that the excess sectors' MIO-queue occupancy explains."""
    if _global(ctx.pcs.get(e.def_)):
        return 0.0
    share = queue_excess_share(ctx)
    if share <= 0:
        return 0.0
    if e.category == "self" and e.reason == "pipe_busy":
        pc = ctx.pcs.get(e.def_)
        return share * (mio_throttle_share(pc) if pc is not None else 0.0)
    if e.reason == "execution_dependency" and e.category != "self":
        site = ctx.site(e.def_)
        if site is not None and site.instruction.base_opcode in MIO_OTHER:
            return share
    return 0.0


SPREAD_SAID = 0.9

# a kernel that reads along one index and writes along another (analysis/tiles.py: the advised tile,
# and why 32 x 8 threads rather than one element per thread in 32 x 32 blocks)
TILE_ADVICE = ("Global accesses fetch more 32-byte sectors than the warp uses, and the kernel reads along one "
               "index and writes along another (one access is coalesced, the other puts each lane in its own "
               "sector): no mapping of threads coalesces both; a remap moves the excess to the other access "
               "(a strided load costs less than a strided store, whose lines are written through to the L2 one "
               "by one, but stays uncoalesced). Stage each block's data through a shared-memory tile: a 32 x 32 "
               "tile padded to 33 "
               "columns, loaded along the input's fastest index, a __syncthreads(), stored along the output's; "
               "with 32 x 8 threads each moving 4 elements, so that every warp keeps 4 lines in flight and "
               "blocks stay at 256 threads (on an H200, a tile moved one element per thread in 32 x 32 blocks "
               "pulled 38% of DRAM's peak, one with two loads per thread in blocks of 256 68%).")


class GlobalMemoryCoalescing(Optimizer):
    id = "global_memory_coalescing"
    keeps = ()   # fewer sectors at L1 and L2; DRAM bytes change too when sectors were fetched and not used
    mlp_factor = None   # the bound is the unit model's (throughput_bound), not the loads-in-flight roof
    title = "Global Memory Coalescing"
    suggestion = ("Global accesses fetch more 32-byte sectors than the warp uses. Make consecutive threads "
                  "touch consecutive addresses (threadIdx.x on the fastest index, blocks at least 32 wide), "
                  "or stage through shared memory.")

    def match(self, ctx) -> Match | None:
        if not has_sectors(ctx):
            return None     # every coalescing_weight and queue_weight is 0 (no excess sectors)
        out = []
        # only these reasons can get a weight (coalescing_weight, queue_weight)
        for e in ctx.edges_where(reasons=MEMORY_REASONS + ("execution_dependency",)) + drain_edges(ctx):
            if e.reason == "memory_throttle" and e.category == "self" and ctx.pcs.get(e.def_) is not None \
                    and DRAIN in ctx.pcs[e.def_].stall_dict() and not ctx.pcs[e.def_].sectors:
                continue  # raw drain samples: counted through drain_edges on the stores
            w = coalescing_weight(ctx, e)
            if w <= 0:
                w = queue_weight(ctx, e)
            if w > 0:
                out.append(e._replace(stall=e.stall * w, latency=e.latency * w))
        if not out:
            return None
        return Match(tuple(out), *edge_sums(out))

    def estimate(self, ctx, match: Match) -> float:
        """The matched-stall estimate, or the unit estimate where the kernel is held by the unit the
        excess sectors load (analysis/coalescing.py), whichever is larger; for a per-lane walk whose
        lanes idle (rows of different lengths), at most what the spread probe's better rewrite gained
        (analysis/lanewalk.py)."""
        est = _with_unit_models(ctx, super().estimate(ctx, match))
        streams = streaming_rewrite(ctx)
        if streams is not None:
            est = max(est, streams)
        cap = idle_lane_cap(ctx)
        return min(est, cap.point) if cap is not None else est

    def estimate_range(self, ctx, match: Match, point: float) -> tuple[float, float] | None:
        """For a per-lane walk whose lanes idle: the spread probe's gain over its warps per SM
        (analysis/lanewalk.py); else the method's range."""
        cap = idle_lane_cap(ctx)
        if cap is None:
            return super().estimate_range(ctx, match, point)
        return min(cap.low, point), max(point, min(cap.high, self._uncapped(ctx, match)))

    def _uncapped(self, ctx, match: Match) -> float:
        return _with_unit_models(ctx, super().estimate(ctx, match))

    def describe(self, ctx, match: Match) -> str:
        cap = idle_lane_cap(ctx)
        if cap is None and transposed_accesses(ctx):
            return TILE_ADVICE
        if cap is None:
            spread = rewrite_spread(ctx)
            # said where the rewrite spreads the work by a tenth or more (the estimate counts any)
            if spread < SPREAD_SAID:
                w, L, sms = walk(ctx), ctx.launch, ctx.device.sm_count
                if L.blocks < sms:
                    where = f"the grid's {L.blocks} blocks run on {L.blocks} of the {sms} SMs"
                    spreads = f"the work spreads over {L.blocks / spread:.0f} SMs"
                else:
                    more = math.ceil(L.blocks / sms)
                    where = (f"the grid's {L.blocks} blocks sit unevenly on the {sms} SMs ({more} on "
                             f"{L.blocks - (more - 1) * sms} of them, which set the time)")
                    spreads = "the work spreads evenly"
                return (f"{self.suggestion} Each thread walks its own row (about {w.elements_per_lane:.0f} "
                        f"elements) and {where}: a warp per row (its lanes striding over the row, a shuffle "
                        "reduction at the end) coalesces the walk and gives the grid 32 times the threads, so "
                        f"{spreads}; the estimate counts both.")
            return self.suggestion
        w = cap.walk
        return (f"Each thread walks its own row (about {w.elements_per_lane:.0f} elements) and the rows differ in "
                f"length: only {100 * w.lanes_active:.0f}% of a warp's lanes are still walking at each step. "
                "Coalescing alone does not recover the idle lanes: stored interleaved (ELL/SELL), each request "
                "also reads the slots of the rows that have ended; a warp per row leaves the lanes past each "
                "row's end idle and adds a reduction. On the H100 (benchmarks/coalescing, lanewalk_spread: rows "
                f"of 1..2L-1 elements, L = 16, 32) the better of the two gained {cap.measured[0]:.2f}-"
                f"{cap.measured[1]:.2f}x at this row length. Give the lanes of "
                "a warp rows of similar length first (sort or bin the rows by length, as SELL-C-sigma does), "
                "then store each slice interleaved.")

    def bound_pct(self, ctx, match: Match | None, unit: str) -> float | None:
        """For ``"mlp"``: the DRAM share a loop-free kernel's coalesced loads in flight reach
        (analysis/coalescing.py, ``loopfree_dram_roof``)."""
        m = unit_model(ctx)
        if unit == "mlp" and m is not None:
            return m.extra.get("loopfree_dram_pct")
        if unit == "rows" and m is not None:
            return m.extra.get("rowgather_dram_pct")
        return super().bound_pct(ctx, match, unit)

    def throughput_bound(self, ctx, match: Match | None = None) -> tuple[float, str | None]:
        """What every unit's work left after coalescing allows (analysis/coalescing.py); none
        without the model (``keeps`` is empty: coalescing changes every memory unit's work)."""
        m = unit_model(ctx)
        if m is None:
            return super().throughput_bound(ctx, match)
        return m.bound, m.bound_unit
