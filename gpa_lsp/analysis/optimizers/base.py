"""The one interface every optimizer implements, and the helpers they share.

An optimizer says what it matches (``match``: blamed samples with the def ->
use pairs that carry them), how much that is worth (``estimate``, with one of
GPA's estimators: ``method``, an :class:`Estimator`), what to tell and change
(``suggestion``, ``fix``), and a few facts the advisor reads instead of ids:
``kind`` (a code or a launch change), ``generic`` (its match contains more
specific optimizers' matches), ``region_cost``, ``keeps`` and ``mlp_factor``;
and, for a specific memory optimizer, the throttle its fix removes
(``explained_throttle``), which generic advice leaves to it. Nothing else:
ranking and presentation belong to the advisor. A new optimizer is a subclass
registered with ``optimizers.register`` (or listed in ``optimizers.REGISTRY``):
see docs/architecture.md. An optimizer imports only this module and
``optimizers.shared`` (what several of them need); facts of the kernel that it
computes once are ``analysis.context.kernel_fact`` functions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Iterable

from ..blame import EDGE_LATENCY, EDGE_STALL, BlameEdge
from ..coarsening import cut_stream
from ..context import KernelContext
from ..estimate import Scope, issue_bound, latency_hiding, scoped_latency_hiding, stall_elimination
from ..model import ChangeKind, Fix
from ..parallelism import mlp_bound
from ...profile.throughput import MEMORY_UNITS, bound as throughput_bound_of


class Estimator(StrEnum):
    """GPA's estimators (section 5): which equation prices a match. The values are the names the
    reports and SARIF rules print."""
    stall_elimination = "stall_elimination"            # Eq. 2: the matched stalls vanish
    latency_hiding = "latency_hiding"                  # Eq. 3-4: the matched latency is overlapped
    scoped_latency_hiding = "scoped_latency_hiding"    # Eq. 5: the same, per loop or function
    parallel = "parallel"                              # Eq. 6-10: more warps per scheduler

    @property
    def hides_latency(self) -> bool:
        """The estimate counts matched latency samples (else matched stall samples)."""
        return self in (Estimator.latency_hiding, Estimator.scoped_latency_hiding)


@dataclass(frozen=True)
class Match:
    edges: tuple[BlameEdge, ...]          # matched def -> use samples (already weighted)
    samples: float                        # matched samples (Eq. 2's M)
    latency: float                        # matched latency samples (Eq. 3-5)
    scopes: tuple[Scope, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)   # what the optimizer keeps for its estimate/fix
    # uses whose throttle is matched only because the matched instructions fill a shared queue
    # ahead of them (optimizers/shared.py queue_edges): part of the cost, never where the advice goes
    queue_uses: frozenset[int] = frozenset()

    def throttle_by_use(self) -> dict[int, float]:
        """Use offset -> matched memory-throttle samples: what a specific advice claims of the
        LSU queue, so that generic advice (Memory Transaction Reduction) can leave it out."""
        out: dict[int, float] = {}
        for e in self.edges:
            if e.reason == "memory_throttle":
                out[e.use] = out.get(e.use, 0.0) + e.stall
        return out


def match_edges(edges: Iterable[BlameEdge], keep: Callable[[BlameEdge], float | bool] = lambda e: True) -> Match | None:
    """Edges where ``keep`` is true (or a weight in 0..1 that scales the edge)."""
    out = []
    add = out.append
    new = tuple.__new__     # e._replace(stall=..., latency=...) without its Python-level frames
    for e in edges:
        w = keep(e)
        if w is True:
            add(e)
        elif w:
            w = float(w)
            if w > 0:
                add(new(BlameEdge, (e[0], e[1], e[2], e[3], e[4] * w, e[5] * w, e[6])))
    if not out:
        return None
    return Match(tuple(out), *edge_sums(out))


def edge_sums(edges) -> tuple[float, float]:
    """(stall, latency) summed over ``edges`` in their order (the same floats as a generator's sum,
    without a Python frame per edge: matches hold 10^4-10^5 edges)."""
    return sum(map(EDGE_STALL, edges)), sum(map(EDGE_LATENCY, edges))


class Optimizer:
    id: str = ""
    title: str = ""
    kind: ChangeKind = ChangeKind.code   # a code or a launch change
    method: Estimator = Estimator.stall_elimination
    # Generic: the match contains what more specific optimizers explain (code reordering's latency
    # includes loop unrolling's; the memory throttle includes what coalescing explains). Within the
    # sampling noise the advisor ranks specific advice first.
    generic: bool = False
    suggestion: str = ""
    # the cost is a property of a region's code size (instruction fetch), not of statements in it:
    # the advice is shown at the fix's line (the loop or function to change), see advisor._advice_location
    region_cost: bool = False
    # Units whose work the change leaves as it is (profile/throughput.py UNITS keys). The new time
    # is at least what the busiest of them needs at its sustained peak, so with measured unit
    # throughput the estimate is at most 100 / its share. A change that keeps every memory
    # instruction and address (unrolling, reordering, cheaper arithmetic, more warps) keeps the
    # memory system's work; optimizers that remove or reshape memory traffic narrow this.
    keeps: tuple[str, ...] = MEMORY_UNITS
    # How the change multiplies the bytes of loads each warp keeps in flight (1: it leaves the
    # loads and their dependencies as they are; the unroll factor for unrolling; None: not known,
    # e.g. a reorder may hoist any number of loads). With ``dram`` in ``keeps`` the estimate is at
    # most what that memory parallelism can pull from DRAM: see analysis/parallelism.py.
    mlp_factor: float | None = 1.0
    # The change removes issue work and nothing else (cheaper arithmetic): on a loop-free stream
    # kernel its time saved comes off the issue slots alone (analysis/coarsening.py, Stream.issue_cut_bound)
    cuts_issue: bool = False

    def match(self, ctx: KernelContext) -> Match | None:  # pragma: no cover - interface
        raise NotImplementedError

    def estimate(self, ctx: KernelContext, match: Match) -> float:
        if self.method == Estimator.stall_elimination:
            return min(stall_elimination(ctx.total, match.samples), match_issue_bound(ctx, match))
        if self.method == Estimator.latency_hiding:
            return latency_hiding(ctx.total, match.latency, ctx.active)
        if self.method == Estimator.scoped_latency_hiding:
            return scoped_latency_hiding(ctx.total, match.scopes)[0]
        raise NotImplementedError(self.method)

    def method_for(self, match: Match) -> Estimator:
        """The estimator ``estimate`` used for this match (an optimizer may switch on what it found)."""
        return self.method

    def estimate_range(self, ctx: KernelContext, match: Match, point: float) -> tuple[float, float] | None:
        """(low, high) around ``point``: what the estimator's two open assumptions allow.

        Why a range from the method and not a sampling interval: with 10^4-10^6 samples the
        binomial error of ``M/T`` moves an estimate by < 1%, while the model's assumptions move
        it by tens of percent. Each code estimator assumes something about the samples it cannot
        see settle:

        * stall elimination -- *low*: only the matched latency samples (cycles the scheduler issued
          nothing) are lost time; matched stalls overlapped by another warp's issue cost no cycle.
          *high*: the issue-slot bound ``T / A_kept`` -- everything but the issue slots left may
          vanish (the fix frees the queue/latency the remaining stalls wait on).
        * latency hiding (Eq. 3-5) -- *low*: the idle cycles are filled only by the sampled warp's
          own issue (``selected``, one warp's reordered work); *high*: Eq. 4 unscoped with the
          scheduler's issued samples (Theorem 5.1's ``<= 2``).

        Parallel estimators return None: their inputs (warps, issue rate) have no such pair.
        """
        if self.kind != "code" or ctx.total <= 0:
            return None
        method = self.method_for(match)
        if method == Estimator.stall_elimination:
            low = stall_elimination(ctx.total, match.latency)
            high = match_issue_bound(ctx, match)
            if high == float("inf"):
                high = stall_elimination(ctx.total, match.samples)
        elif Estimator(method).hides_latency:
            low = latency_hiding(ctx.total, match.latency, ctx.by_category.get("active", 0))
            high = latency_hiding(ctx.total, match.latency, ctx.active)
        else:
            return None
        return min(low, point), max(high, point)

    def mlp_factor_for(self, match: Match | None) -> float | None:
        """How this match's fix multiplies the loads in flight (``mlp_factor`` unless the match says
        otherwise; see RestrictPointer)."""
        return self.mlp_factor

    def throughput_bound(self, ctx: KernelContext, match: Match | None = None) -> tuple[float, str | None]:
        """(bound, unit): the memory-system bound on this change's speedup, see ``keeps`` and
        ``mlp_factor``; unit ``"mlp"`` when the memory-parallelism roof is the tighter one."""
        cap, unit = throughput_bound_of(ctx.kernel.throughput, self.keeps)
        factor = self.mlp_factor_for(match)
        if "dram" in self.keeps and factor is not None and self.kind == ChangeKind.code:
            roof, _ = mlp_bound(ctx, factor)
            if roof < cap:
                cap, unit = roof, "mlp"
            s = cut_stream(ctx) if self.cuts_issue and factor == 1.0 and match is not None else None
            if s is not None:
                # a stream kernel's DRAM time overlaps its issue: cutting the issue leaves the
                # memory's part (analysis/coarsening.py, ``Stream.issue_cut_bound``)
                cut = s.issue_cut_bound(self.estimate(ctx, match))
                if cut < cap:
                    cap, unit = cut, "stream"
        return cap, unit

    def bound_pct(self, ctx: KernelContext, match: Match | None, unit: str) -> float | None:
        """The share of peak (%) the advice quotes with its bound: the unit's measured share, or for
        ``"mlp"`` the DRAM share the code's loads in flight can reach."""
        if unit == "mlp":
            return mlp_bound(ctx, self.mlp_factor_for(match))[1]
        return ctx.kernel.throughput.pct(unit) if ctx.kernel.throughput is not None else None

    def describe(self, ctx: KernelContext, match: Match) -> str:
        return self.suggestion

    def placed_at(self, ctx: KernelContext, match: Match) -> int | None:
        """The offset of the instruction whose line the advice belongs on, where the estimate comes
        from a model of the code rather than from the matched stalls (whose defs place it
        otherwise: advisor._advice_location); None by default."""
        return None

    def explained_throttle(self, ctx: KernelContext) -> dict[int, float]:
        """Use offset -> memory-throttle samples this (specific) optimizer's fix removes: the LSU queue
        entries of the instructions it deletes. Generic advice (Memory Transaction Reduction) leaves
        them out, per use PC, so that the specific advice owns them. Default: none."""
        return {}

    def fix(self, ctx: KernelContext, match: Match) -> Fix | None:
        return None

    def source_place(self, ctx: KernelContext, match: Match) -> tuple[str, int] | None:
        """(file, line) where advice with no fix is shown: launch-shape advice (the loop to cut, say;
        None: the kernel's first line), or code advice about a region rather than a statement (the
        loop whose trip count to make constant; None: the line whose defs carry the match)."""
        return None


#: The optimizers the advisor runs by default, in order (filled by ``optimizers/__init__``; change it
#: with ``optimizers.register``/``unregister``). Here, not in the package, so that an optimizer that
#: reads its peers (Memory Transaction Reduction asks each for ``explained_throttle``) imports only base.
REGISTRY: list[Optimizer] = []


def reason_share(pc, reason: str, among: tuple[str, ...]) -> float:
    """The share of a PC's samples of the raw reasons ``among`` that are ``reason`` (0 without samples):
    e.g. how much of a memory-throttle sample is LG-queue throttle rather than drain."""
    if pc is None:
        return 0.0
    part = total = 0
    for r, n in pc.stalls:
        if r in among:
            total += n
            if r == reason:
                part += n
    return part / total if total else 0.0


def match_issue_bound(ctx: KernelContext, match: Match) -> float:
    """Eq. 2 cannot beat the issue slots left: see ``estimate.issue_bound``. The instructions a
    match deletes are its matched issue samples (reason ``active``: the sampled warp issuing)."""
    removed = sum(e.stall for e in match.edges if e.reason == "active")
    return issue_bound(ctx.total, ctx.active, ctx.by_category.get("active", 0), removed)


def loop_scopes_for(ctx: KernelContext, edges: Iterable[BlameEdge], *, function_scope: bool,
                    own_issue: bool = False) -> tuple[Scope, ...]:
    """Eq. 5 scopes: each edge's latency goes to the innermost loop holding its def (or the function).

    A scope's A is the scheduler's issued samples in it, or with ``own_issue`` the sampled warp's
    own issue samples (``selected``): what a change confined to one warp's instruction order has
    to put into the idle cycles (see code_reordering)."""
    pending: dict[object, float] = defaultdict(float)
    key_of: dict[int, object] = {}      # def -> its scope key (None: not counted), found once per def
    site_at, loop_at = ctx.site, ctx.loop_of
    for e in edges:
        d = e.def_
        key = key_of.get(d, False)
        if key is False:
            site = site_at(d)
            lp = loop_at(d) if site is not None else None
            if site is None or (lp is None and not function_scope):
                key = None
            else:
                key = (site.function.name, lp.header_offset) if lp else (site.function.name, None)
            key_of[d] = key
        if key is not None:
            pending[key] += e.latency
    scopes: list[Scope] = []
    issued = ctx.selected_in if own_issue else ctx.issued_in
    for fb in ctx.blames:
        fn = fb.function
        fkey = (fn.name, None)
        if function_scope:
            scopes.append(Scope(fkey, None, float(issued(fn, range(len(fn.instructions)))), pending.get(fkey, 0.0)))
        for lp in ctx.loops.get(fn.name, ()):
            key = (fn.name, lp.header_offset)
            parent = (fn.name, lp.parent) if lp.parent is not None else (fkey if function_scope else None)
            scopes.append(Scope(key, parent, float(issued(fn, lp.instructions)), pending.get(key, 0.0)))
    return tuple(scopes)


def hottest(edges: Iterable[BlameEdge], key=lambda e: e.def_) -> list[tuple[Any, float]]:
    acc: dict[Any, float] = defaultdict(float)
    for e in edges:
        acc[key(e)] += e.stall
    return sorted(acc.items(), key=lambda kv: -kv[1])
