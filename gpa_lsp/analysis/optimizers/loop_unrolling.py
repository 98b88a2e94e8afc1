"""Loop Unrolling: latency of dependencies whose def and use sit in the same loop (scoped latency hiding)."""

from __future__ import annotations

from ..model import Fix
from .base import Match, Optimizer, hottest, loop_scopes_for, match_edges

DEPENDENCY = ("memory_dependency", "execution_dependency")


class LoopUnrolling(Optimizer):
    id = "loop_unrolling"
    title = "Loop Unrolling"
    method = "scoped_latency_hiding"
    suggestion = ("Each iteration waits on values produced in the same iteration. Unroll the loop "
                  "(#pragma unroll N, or by hand when the trip count is not known) so independent loads and "
                  "arithmetic of several iterations overlap.")
    factor = 4

    def match(self, ctx) -> Match | None:
        def keep(e):
            if e.reason not in DEPENDENCY or e.category == "self" or e.latency <= 0:
                return False
            lp = ctx.loop_of(e.def_)
            return lp is not None and ctx.site(e.use).index in lp.instructions
        m = match_edges(ctx.edges, keep)
        if m is None:
            return None
        return Match(m.edges, m.samples, m.latency, loop_scopes_for(ctx, m.edges, function_scope=False))

    def fix(self, ctx, match: Match) -> Fix | None:
        by_loop = hottest(match.edges, key=lambda e: ctx.loop_of(e.def_))
        for lp, _ in by_loop:
            if lp is not None and lp.file and lp.line:
                return Fix("unroll", lp.file, lp.line, {"factor": self.factor})
        return None
