"""Loop No-Unroll: instruction-fetch stalls in loops whose unrolled body overflows the instruction cache."""

from __future__ import annotations

from ..model import Fix
from .base import Match, Optimizer, hottest, match_edges


class LoopNoUnroll(Optimizer):
    id = "loop_no_unroll"
    title = "Reduce Loop Unrolling (instruction cache)"
    suggestion = ("Instruction fetch stalls inside loops: the unrolled body does not fit the instruction "
                  "cache. Lower the unroll factor (#pragma unroll 2, or #pragma unroll 1 on the outer loop).")

    def match(self, ctx) -> Match | None:
        return match_edges(ctx.edges, lambda e: e.reason == "instruction_fetch" and ctx.loop_of(e.use) is not None)

    def fix(self, ctx, match: Match) -> Fix | None:
        for lp, _ in hottest(match.edges, key=lambda e: ctx.loop_of(e.use)):
            if lp is not None and lp.file and lp.line:
                return Fix("unroll", lp.file, lp.line, {"factor": 2})
        return None
