"""Loop No-Unroll: instruction-fetch stalls in unrolled loop code that overflows the instruction cache.

Instruction-fetch stalls (``no_instructions``, ``branch_resolving``) are
self-blamed: the instruction that could not be fetched is the one sampled.
They belong to this optimizer when that instruction is loop code:

* inside a loop of the SASS (a partially unrolled loop), or
* on a source line inside a source ``for``/``while`` loop while no SASS loop
  holds it: the compiler unrolled the loop completely, so its iterations
  became straight-line code (a 16x32x8 nest becomes ~26k instructions) that
  warps stream through once, missing in the instruction caches all the way.
  -lineinfo keeps the loop body's lines on the copies, which is how the
  copies are recognised; this needs the sources.

Fewer copies (a lower unroll factor) make the body fit the caches again:
stall elimination (Eq. 2) of the matched fetch stalls that are latency
samples (the scheduler issued nothing): a fetch wait overlapped by another
warp's issue costs nothing, and all stall samples overstated the gain ~2x. The fix names the
outermost completely unrolled loop around the hottest fetch stalls (``#pragma
unroll 1``: seed 003's sweet spot keeps the inner unroll), or the SASS loop
(factor 2).
"""

from __future__ import annotations

from ..context import kernel_fact
from ..model import Fix
from ..sources import SourceLoop, source_loops
from .base import Match, Optimizer, hottest, match_edges
from .shared import fetch_stall_elimination


@kernel_fact
def _loops_around(ctx, file: str) -> dict[int, list[SourceLoop]]:
    """Line -> the source loops of ``file`` (as the kernel's reader has it) around it, outermost first.

    An index, built once per file: asked per stalled instruction, a scan of every loop of the file
    was quadratic in a kernel of thousands of loops."""
    lines = ctx.reader(file)
    around: dict[int, list[SourceLoop]] = {}
    for lp in source_loops(lines) if lines else ():
        for line in range(lp.line, lp.last + 1):
            around.setdefault(line, []).append(lp)
    return {line: sorted(loops, key=lambda lp: lp.line) for line, loops in around.items()}


def flattened_loops(ctx, offset: int) -> list[SourceLoop]:
    """Source loops (outermost first) around the instruction's line, when no SASS loop holds it."""
    if ctx.loop_of(offset) is not None:
        return []
    site = ctx.site(offset)
    loc = site.instruction.loc if site else None
    if loc is None:
        return []
    return list(_loops_around(ctx, loc.file).get(loc.line, ()))


class LoopNoUnroll(Optimizer):
    id = "loop_no_unroll"
    title = "Reduce Loop Unrolling (instruction cache)"
    suggestion = ("Instruction fetch stalls inside unrolled loop code: the unrolled body does not fit the "
                  "instruction cache. Lower the unroll factor (#pragma unroll 1 on the outer loop, "
                  "#pragma unroll 2 inside).")

    region_cost = True   # shown at the loop/function to change, not at a statement inside

    def estimate(self, ctx, match: Match) -> float:
        """Eq. 2 on the matched *latency* samples: see ``fetch_stall_elimination``."""
        return fetch_stall_elimination(ctx, match)

    def match(self, ctx) -> Match | None:
        def keep(e):
            return ctx.loop_of(e.use) is not None or bool(flattened_loops(ctx, e.use))
        return match_edges(ctx.edges_where(reasons=("instruction_fetch",)), keep)

    def fix(self, ctx, match: Match) -> Fix | None:
        for off, _ in hottest(match.edges, key=lambda e: e.use):
            lp = ctx.loop_of(off)
            if lp is not None and lp.file and lp.line:
                # "less": the pragma is meant to shrink the code (verification expects it to)
                return Fix("unroll", lp.file, lp.line, {"factor": 2, "less": True})
            flat = flattened_loops(ctx, off)
            if flat:
                loc = ctx.location(off)
                return Fix("unroll", loc.file, flat[0].line, {"factor": 1, "less": True})
        return None
