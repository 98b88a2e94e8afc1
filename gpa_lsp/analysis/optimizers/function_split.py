"""Function Split: instruction-fetch stalls inside inlined functions (the code is too large).

Estimated like Loop No-Unroll: stall elimination of the fetch stalls that are
latency samples (the scheduler idled), see ``shared.fetch_stall_elimination``.
"""

from __future__ import annotations

import re
from collections import Counter

from ..model import Fix
from .base import Match, Optimizer, match_edges
from .shared import fetch_stall_elimination


class FunctionSplit(Optimizer):
    id = "function_split"
    title = "Function Split"
    suggestion = ("Instruction fetch stalls fall in inlined code: the kernel is larger than the instruction "
                  "cache holds. Keep rarely taken paths out of line (__noinline__) or split the kernel.")

    region_cost = True   # shown at the loop/function to change, not at a statement inside

    def estimate(self, ctx, match: Match) -> float:
        """Eq. 2 on the matched *latency* samples: see ``fetch_stall_elimination``."""
        return fetch_stall_elimination(ctx, match)

    def match(self, ctx) -> Match | None:
        def keep(e):
            site = ctx.site(e.use)
            return site is not None and bool(site.instruction.inline)
        return match_edges(ctx.edges_where(reasons=("instruction_fetch",)), keep)

    def fix(self, ctx, match):
        calls: Counter = Counter()
        for e in match.edges:
            site = ctx.site(e.use)
            if site and site.instruction.inline and site.instruction.loc:
                calls[(site.instruction.loc.file, site.instruction.inline[0].line)] += e.stall
        if not calls:
            return None
        (file, line), _ = calls.most_common(1)[0]
        lines = ctx.reader(file)
        name = _callee_at(lines[line - 1]) if lines and 0 < line <= len(lines) else None
        return Fix("noinline", file, line, {"function": name}) if name else None


def _callee_at(text: str) -> str | None:
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", text):
        if m.group(1) not in ("if", "for", "while", "switch", "return", "sizeof"):
            return m.group(1)
    return None
