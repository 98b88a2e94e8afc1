"""Strength Reduction: stalls blamed on long fixed-latency arithmetic (conversions, MUFU, FP64, POPC)."""

from __future__ import annotations

from .. import defuse
from ..model import Fix
from ..sources import double_literals, source_line
from .base import Match, Optimizer, hottest, match_edges

SLOW = defuse.CONVERSIONS | defuse.MUFU | defuse.FP64 | {"POPC", "FLO", "BREV"}


class StrengthReduction(Optimizer):
    id = "strength_reduction"
    title = "Strength Reduction"
    suggestion = ("Stalls wait on slow arithmetic: float<->double conversions (double literals such as 0.5 "
                  "in float code), FP64, special functions or integer division. Use float literals (0.5f), "
                  "float math, multiplications by reciprocals, shifts for powers of two.")

    def match(self, ctx) -> Match | None:
        def keep(e):
            site = ctx.site(e.def_)
            if site is None or e.category == "self":
                return e.category == "self" and site is not None and site.instruction.base_opcode in SLOW \
                    and e.reason == "pipe_busy"
            return e.category == "arithmetic" and site.instruction.base_opcode in SLOW
        return match_edges(ctx.edges, keep)

    def fix(self, ctx, match: Match) -> Fix | None:
        for off, _ in hottest(match.edges):
            loc = ctx.location(off)
            if loc is None:
                continue
            text = source_line(ctx.reader, loc.file, loc.line)
            if text is None:
                continue
            cols = double_literals(text)
            if cols:
                return Fix("float_literal", loc.file, loc.line, {"columns": [list(c) for c in cols]})
        return None
