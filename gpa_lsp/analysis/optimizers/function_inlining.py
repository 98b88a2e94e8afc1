"""Function Inlining: dependency latency inside small called device functions, which calls cut off."""

from __future__ import annotations

from collections import Counter

from ...profile.demangle import qualified_name
from ...sass.opcodes import CALLS, RETURNS
from ..estimate import latency_hiding
from ..model import Fix
from .base import Estimator, Match, Optimizer, match_edges
from .shared import math_library_offsets

SMALL = 64 * 16   # bytes: a function up to 64 instructions is cheap to inline


class FunctionInlining(Optimizer):
    id = "function_inlining"
    title = "Function Inlining"
    method = Estimator.latency_hiding
    suggestion = ("Stalls sit inside a small device function that is called, not inlined: the compiler cannot "
                  "schedule across the call. Mark it __forceinline__ (or drop __noinline__).")

    def match(self, ctx) -> Match | None:
        library = math_library_offsets(ctx)

        def keep(e):
            s = ctx.site(e.use)
            if s is None or s.function.entry or s.function.size > SMALL or e.use in library:
                return False
            return e.reason in ("memory_dependency", "execution_dependency") or \
                s.instruction.base_opcode in RETURNS | CALLS
        m = match_edges(ctx.edges, keep)
        if m is None:
            return None
        fns = {ctx.site(e.use).function.name for e in m.edges}
        return Match(m.edges, m.samples, m.latency, data={"functions": sorted(fns)})

    def estimate(self, ctx, match: Match) -> float:
        active = sum(ctx.issued_in(fb.function, range(len(fb.function.instructions)))
                     for fb in ctx.blames if fb.function.name in match.data.get("functions", ()))
        return latency_hiding(ctx.total, match.latency, active)

    def fix(self, ctx, match: Match) -> Fix | None:
        c: Counter = Counter()
        for e in match.edges:
            c[ctx.site(e.use).function] += e.stall
        if not c:
            return None
        fn = c.most_common(1)[0][0]
        name = qualified_name(fn.demangled or fn.name)
        first = next((i.loc for i in fn.instructions if i.loc), None)
        return Fix("inline", first.file if first else None, first.line if first else None, {"function": name})
