"""Loop Unrolling: latency of dependencies whose def and use sit in the same loop (scoped latency hiding).

Why Eq. 5's A stays the scheduler's issued samples (unlike Code Reordering): unrolling puts
several iterations' independent chains into one warp's stream, so their latencies overlap each
other and the idle cycles are filled by every warp's extra in-flight work, not just by one
warp's own reordered instructions.

Why recurrences are left out: a dependence whose def comes at or after its use in the loop body
reaches the use through the back edge (``acc = fma(a, b, acc)``, ``p = next[p]``): it is carried
from one iteration to the next, and unrolling keeps it serial (nvcc does not reassociate float
arithmetic); the loop takes at least trip count x the chain's latency however it is unrolled.
Only dependences inside one iteration (a load and its use) overlap across unrolled iterations.

Why loops with a barrier are left out: the compiler does not move memory operations across a
``bar.sync``, so after unrolling, iteration i+1's loads still wait behind iteration i's
barrier and nothing overlaps; hoisting a load above the barrier is a reorder by hand (Code
Reordering's advice), not an unroll.

Why loops nvcc unrolled itself are left out: at -O3 nvcc unrolls a loop with a run-time trip count
(an unrolled body and a remainder loop on the loop's source line in the SASS,
``flow.unrolled_by_compiler``) and hoists the unrolled iterations' loads above their uses, so the
dependences left inside an iteration are what the compiler could not overlap, and a
``#pragma unroll 4`` asks for what it did or less. ``benchmarks/unroll`` measured it on the H200
(a one- and a two-array walk that nvcc unrolls by 16, 4 to 64 warps per SM): the pragma's 4 ran
0.46-1.05x the default's time, 8 0.78-1.06x; only no unrolling at all (``#pragma unroll 1``) is
what the advice's mechanism prices (0.14-0.90x). Calibration cases of this shape measured their
``unroll4`` variants at 0.61-1.02x (conv1d_taps, dot_runtime_unroll, gemv_rows, gemv_resident,
head_rmsnorm, horner_rows, zscore_features).

Why loops with a call are left out: nvcc does not move a load across a call (a slow-path subroutine
of a division or square root, a ``__noinline__`` function), so in the unrolled body each
iteration's loads still come after the previous iteration's call, and nothing overlaps.
``benchmarks/unroll``'s ``div`` walk (``s / x[i]``: RCP, refinement, a call to the slow path) ran
0.98-1.01x of its rolled loop's time unrolled by 4 or 8, at 4-64 warps per SM, where the same walk
without the division gained up to 7x from unrolling. Calibration: nbody_direct (16 calls in its
loop, Loop Unrolling 1.38x, unroll4 measured 0.99x) and particle_blocks (4, 1.19x, unroll8 1.00x).
"""

from __future__ import annotations

from ...sass.opcodes import CALLS, CTA_BARRIERS
from ..flow import unrolled_by_compiler
from ..model import Fix
from ..tripcount import ShortTrip, short_trips
from .base import Estimator, Match, Optimizer, hottest, loop_scopes_for, match_edges

DEPENDENCY = ("memory_dependency", "execution_dependency")


def compiler_unrolled(ctx, lp) -> bool:
    """Whether nvcc already unrolled the loop (``flow.unrolled_by_compiler`` among its function's loops)."""
    site = ctx.site(lp.header_offset)
    return site is not None and unrolled_by_compiler(ctx.loops.get(site.function.name, ()), lp)


def _body_has(ctx, lp, opcodes) -> bool:
    """Whether an instruction of the loop's body is one of ``opcodes`` (base opcodes)."""
    site = ctx.site(lp.header_offset)
    if site is None:
        return False
    ins = site.function.instructions
    return any(ins[k].base_opcode in opcodes for k in lp.instructions)


def has_call(ctx, lp) -> bool:
    """Whether the loop's body calls a subroutine (the module's docstring)."""
    return _body_has(ctx, lp, CALLS)


def has_barrier(ctx, lp) -> bool:
    """Whether the loop's body holds a CTA barrier (the module's docstring)."""
    return _body_has(ctx, lp, CTA_BARRIERS)


class LoopUnrolling(Optimizer):
    id = "loop_unrolling"
    title = "Loop Unrolling"
    method = Estimator.scoped_latency_hiding
    suggestion = ("Each iteration waits on values produced in the same iteration. Unroll the loop "
                  "(#pragma unroll N, or by hand when the trip count is not known) so independent loads and "
                  "arithmetic of several iterations overlap.")
    factor = 4
    mlp_factor = factor   # the unrolled iterations' loads are in flight together

    def match(self, ctx) -> Match | None:
        memo: dict = {}

        def left_out(lp) -> bool:
            """A barrier or a call in the loop, or nvcc unrolled it already (the module's docstring)."""
            if lp.header_offset not in memo:
                memo[lp.header_offset] = has_barrier(ctx, lp) or has_call(ctx, lp) or compiler_unrolled(ctx, lp)
            return memo[lp.header_offset]

        def keep(e):
            if e.category == "self" or e.latency <= 0:
                return False
            if e.def_ >= e.use:
                return False           # loop-carried (a recurrence): not overlapped by unrolling
            lp = ctx.loop_of(e.def_)
            return lp is not None and ctx.site(e.use).index in lp.instructions and not left_out(lp)
        m = match_edges(ctx.edges_where(reasons=DEPENDENCY), keep)
        if m is not None:
            m = Match(m.edges, m.samples, m.latency, loop_scopes_for(ctx, m.edges, function_scope=False))
        trips = short_trips(ctx)
        if not trips or (m is not None and super().estimate(ctx, m) >= trips[0].estimate()):
            return m
        return self._trip_match(ctx, trips[0])

    @staticmethod
    def _trip_match(ctx, trip: ShortTrip) -> Match | None:
        """The short trip's match: the stalls of what runs per trip (they show where the time goes), with
        the share of the kernel's samples the estimate removes (time in proportion to instructions)
        as its matched samples."""
        fn = next((fb.function for fb in ctx.blames if fb.function.name == trip.function), None)
        if fn is None:
            return None
        offsets = {fn.instructions[k].offset for k in trip.region}
        m = match_edges(ctx.edges_where(), lambda e: e.use in offsets and e.category != "self")
        if m is None:
            return None
        share = trip.saved * ctx.total
        return Match(m.edges, share, share, (), data={"trip": trip})

    def method_for(self, match: Match) -> Estimator:
        """A short trip's instructions are removed, not overlapped: its matched samples are the share
        the change takes away (stall elimination's reading)."""
        return Estimator.stall_elimination if "trip" in match.data else self.method

    def estimate(self, ctx, match: Match) -> float:
        trip = match.data.get("trip")
        return trip.estimate() if trip is not None else super().estimate(ctx, match)

    def estimate_range(self, ctx, match: Match, point: float) -> tuple[float, float] | None:
        """For a short trip: from the issue slots alone (the other cycles as they were) to the point."""
        trip = match.data.get("trip")
        if trip is None:
            return super().estimate_range(ctx, match, point)
        t = ctx.kernel.throughput
        u = t.pct("issue") / 100.0 if t is not None and t.pct("issue") else ctx.active / max(ctx.total, 1)
        return min(trip.issue_only(u), point), point

    def describe(self, ctx, match: Match) -> str:
        trip = match.data.get("trip")
        if trip is None:
            return self.suggestion
        return (f"The loop's trip count is a run-time value and short: nvcc unrolled it by {trip.factor}, but "
                f"the iterations mostly run through the peeled copies and the remainder, "
                f"{trip.run_cost:.1f} instructions per memory or arithmetic instruction against "
                f"{trip.body_cost:.1f} in the unrolled body. Make the trip count a compile-time constant (a "
                f"template parameter or constexpr) so nvcc unrolls the loop fully: about "
                f"{100 * trip.saved:.0f}% of the kernel's instructions go.")

    def source_place(self, ctx, match: Match) -> tuple[str, int] | None:
        trip = match.data.get("trip")
        return (trip.file, trip.line) if trip is not None and trip.file and trip.line else None

    def fix(self, ctx, match: Match) -> Fix | None:
        if "trip" in match.data:
            return None     # a template parameter is the developer's edit: no pragma does it
        # keyed by the loop's identity: a LoopScope's dataclass hash rebuilds a tuple of its fields
        # per call (10^4 edges); each loop is one object of the context, so identity is equality here
        loops: dict[int, object] = {}
        loop_of = ctx.loop_of

        def key(e):
            lp = loop_of(e.def_)
            loops[id(lp)] = lp
            return id(lp)
        for k, _ in hottest(match.edges, key=key):
            lp = loops[k]
            if lp is not None and lp.file and lp.line:
                return Fix("unroll", lp.file, lp.line, {"factor": self.factor})
        return None
