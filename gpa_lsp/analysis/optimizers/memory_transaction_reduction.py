"""Memory Transaction Reduction: memory-throttle stalls (too many memory requests in flight).

Why it leaves out part of some throttle samples: GPA ranks the specific advice
over the generic one. When the throttled instruction is a global access whose
sectors exceed the ideal (per-instruction counters from Nsight Compute), the
``1 - ideal/sectors`` share of its throttle samples is explained by Global
Memory Coalescing (the excess requests *are* the throttle); only the rest is
this optimizer's. The same holds for ``drain`` samples caused by excess store
sectors. A gather's excess is not Coalescing's (no mapping of threads
coalesces a data address: ``analysis/gathers.py``), so its
throttle stays here. Without sector counters (CUPTI) nothing changes.

Gathers that share an index (``ex[c]``, ``ey[c]``, ``ez[c]``) are the one case where this advice
names the change and prices it from the hardware (``analysis/gathers.py``, measured by
benchmarks/coalescing/fieldgather_probe.cu): stored side by side they are one 8- or 16-byte
gather, which reads its DRAM line once instead of once per field; where the kernel's DRAM holds
its time, the estimate is the DRAM bytes saved, if larger than the matched stalls.

The same rule applies to throttle that other specific advice explains per
instruction: LG-queue entries taken by aliasing reloads (Restrict Pointer)
and by spill or local-array accesses (Register Reuse, Local Array). Their
throttle samples go with the instructions that cause them: removing those
instructions empties the queue, which is that advice's claim, so the generic
optimizer keeps only the throttle nobody more specific explains: what every
registered optimizer declares through ``Optimizer.explained_throttle``,
subtracted per use PC. A new specific optimizer gets that credit by
overriding the hook; this file does not name it.
"""

from __future__ import annotations

from ..coarsening import coarsening
from ..coalescing import has_sectors, model, sector_excess
from ..copywalk import widened_estimate
from ..gathers import index_groups, merge_estimate
from ..widening import widened_l1_estimate
from .base import REGISTRY, Match, Optimizer, match_edges
from .shared import drain_edges


class MemoryTransactionReduction(Optimizer):
    id = "memory_transaction_reduction"
    generic = True
    keeps = ()   # fewer or wider transactions change the work of every memory level
    title = "Memory Transaction Reduction"
    suggestion = ("The memory pipeline is throttled. Issue fewer, wider and coalesced accesses (float4 "
                  "loads), reuse data through shared memory or registers, move read-only data to constant "
                  "or texture memory.")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        drained = {}
        for d in drain_edges(ctx):
            drained[d.use] = drained.get(d.use, 0.0) + d.stall * sector_excess(ctx, d.def_)

        explained: dict[int, float] = {}
        for peer in REGISTRY:
            if peer is self:
                continue
            for off, n in peer.explained_throttle(ctx).items():
                explained[off] = explained.get(off, 0.0) + n
        throttle = ctx.edges_where(reasons=("memory_throttle",))
        own: dict[int, float] = {}
        for e in throttle:
            own[e.use] = own.get(e.use, 0.0) + e.stall

        def left(e) -> float:
            """The share of ``e``'s use PC throttle no specific advice explains."""
            n = own.get(e.use, 0.0)
            return max(0.0, 1.0 - explained.get(e.use, 0.0) / n) if n > 0 else 1.0

        if not has_sectors(ctx):
            # no sector counts: every sector_excess is 0, so _keep is 1.0 and keep is left(e)
            return match_edges(throttle, left)

        def keep(e):
            return _keep(e) * left(e)

        def _keep(e) -> float:
            if e.def_ in drained and not (pcs[e.def_].sectors or 0):
                # drain samples: the part caused by excess store sectors is coalescing's (or, for a
                # misaligned store, nobody's: coalescing.misaligned_only)
                n = pcs[e.def_].stall_dict().get("drain", 0)
                return max(0.0, 1.0 - drained[e.def_] / n) if n else 1.0
            return 1.0 - sector_excess(ctx, e.def_)
        return match_edges(throttle, keep)

    def estimate(self, ctx, match: Match) -> float:
        """The matched-stall estimate, or, where gathers share an index and the kernel's DRAM holds
        its time, what merging them into record gathers saves of its DRAM bytes
        (``analysis/gathers.py``, measured by benchmarks/coalescing/fieldgather_probe.cu), whichever
        is larger; for a per-lane copy walk no unit holds, at least what the copywalk probe's walk
        gained from float4 accesses (``analysis/copywalk.py``, ``widened_estimate``); where narrow
        per-lane loads hold the L1, what widening them saves of its work (``analysis/widening.py``);
        for narrow coalesced streams, what k elements per thread with vector accesses gain
        (``analysis/coarsening.py``)."""
        est = super().estimate(ctx, match)
        merged = merge_estimate(ctx)
        est = max(est, merged[0]) if merged is not None else est
        wide = widened_estimate(ctx, model(ctx))
        est = max(est, wide) if wide is not None else est
        l1 = widened_l1_estimate(ctx)
        est = max(est, l1[0]) if l1 is not None else est
        c = coarsening(ctx)
        return max(est, c.estimate) if c is not None else est

    def _coarsened(self, ctx, match: Match):
        """The widening of narrow streams (``analysis/coarsening.py``) where it sets the estimate."""
        c = coarsening(ctx)
        if c is not None and c.estimate > super().estimate(ctx, match) and not self._wider(ctx, c.estimate):
            return c
        return None

    def placed_at(self, ctx, match: Match) -> int | None:
        """The first stream load, where the coarsening sets the estimate: the statement to widen."""
        c = self._coarsened(ctx, match)
        loads = [o for o in c.streams if ctx.site(o).instruction.memory.plain_load] if c is not None else []
        return min(loads) if loads else None

    @staticmethod
    def _wider(ctx, estimate: float) -> bool:
        """Whether another of this advice's models prices more than ``estimate`` (its text wins)."""
        l1, merged, wide = widened_l1_estimate(ctx), merge_estimate(ctx), widened_estimate(ctx, model(ctx))
        return ((l1 is not None and l1[0] > estimate) or (merged is not None and merged[0] > estimate)
                or (wide is not None and wide > estimate))

    def describe(self, ctx, match: Match) -> str:
        c = self._coarsened(ctx, match)
        if c is not None:
            lines = sorted({loc.line for o in c.streams if (loc := ctx.location(o)) is not None and loc.line})
            at = f" ({'lines' if len(lines) > 1 else 'line'} {', '.join(map(str, lines))})" if lines else ""
            if c.channels > 1:
                return (f"Each thread converts one element of an array of {c.channels} interleaved channels{at}: "
                        f"the lanes of a warp read narrow elements {c.channels} apart, each line is read once per "
                        "channel, and every element pays the whole per-thread work (the division of the flat "
                        f"index, bounds check). Take {c.elements} consecutive positions per thread with all "
                        f"{c.channels} channels, loaded as contiguous bytes with 16-byte vector accesses, and "
                        f"store each channel's {c.elements} values with one vector access: "
                        f"{100 * (1 - c.issue_ratio):.0f}% of the instructions go, and the lines are read "
                        "once (the whole kernel, not the throttled instructions below, is what this prices).")
            sizes = sorted({c.elements * ctx.site(o).instruction.memory.width // 8 for o in c.streams})
            vector = "/".join(map(str, sizes)) + "-byte"
            return (f"Each thread moves one narrow element of each coalesced stream{at} and pays its whole "
                    "per-thread work (index math, bounds check, loads the neighbouring elements share) for it. Take "
                    f"{c.elements} consecutive elements per thread, each stream moved with one {vector} vector "
                    f"access (float4, uchar4, ...): {100 * (1 - c.issue_ratio):.0f}% of the instructions go, and each warp "
                    f"keeps {c.elements}x the bytes in flight, which DRAM needs to approach its peak "
                    "(the whole stream kernel, not the throttled instructions below, is what this prices).")
        l1 = widened_l1_estimate(ctx)
        if l1 is not None and l1[0] > super().estimate(ctx, match):
            pct = ctx.kernel.throughput.pct("l1")
            return (f"The L1 is the busiest unit ({pct:.0f}% of its peak), and {100 * l1[1]:.0f}% of the global "
                    "sectors come from 4-byte loads each lane makes of its own consecutive elements, "
                    "uncoalesced across the warp: every such load costs the L1 a pass per line for 4 bytes "
                    "of it. Load them as float4 (16 bytes per lane and pass, a quarter of the passes). "
                    + self.suggestion)
        if merge_estimate(ctx) is None:
            return self.suggestion
        lines = sorted({loc.line for grp in index_groups(ctx) for o in grp
                        if (loc := ctx.location(o)) is not None and loc.line})
        at = f" (lines {', '.join(map(str, lines))})" if lines else ""
        return (f"Gathers share an index{at}: each reads its own DRAM line for a few bytes. Store the "
                "fields side by side (one float2/float4 record per index) so that one 8- or 16-byte "
                "gather replaces them: on the H100 (benchmarks/coalescing, fieldgather) one 16-byte "
                "record gather took 0.14 ms where four 4-byte gathers took 0.51 ms. " + self.suggestion)
