"""Restrict Pointer: global loads through pointers the compiler cannot prove read-only."""

from __future__ import annotations

import re

from ..model import Fix
from ..sources import body_range, find_function, is_written, pointer_parameters
from .base import Match, Optimizer, hottest, match_edges


def _plain_global_load(ins) -> bool:
    return ins.base_opcode in ("LDG", "LD") and ".CONSTANT" not in ins.opcode


class RestrictPointer(Optimizer):
    id = "restrict_pointer"
    title = "Restrict Pointer"
    method = "latency_hiding"
    suggestion = ("Loads go through a pointer that may alias the kernel's stores, so the compiler neither uses "
                  "the read-only path nor moves loads earlier. Declare read-only inputs `const T* __restrict__`.")

    def match(self, ctx) -> Match | None:
        def keep(e):
            s = ctx.site(e.def_)
            return e.category == "global_memory" and s is not None and _plain_global_load(s.instruction)
        return match_edges(ctx.edges, keep)

    def fix(self, ctx, match: Match) -> Fix | None:
        entry = ctx.entry
        name = (entry.demangled or entry.name).split("(")[0].split("::")[-1].strip()
        loc = next((i.loc for i in entry.instructions if i.loc), None)
        if loc is None:
            return None
        lines = ctx.reader(loc.file)
        if lines is None:
            return None
        def_line = find_function(lines, name)
        if def_line is None:
            return None
        first, last = body_range(lines, def_line)
        params = pointer_parameters(lines, def_line)
        hot_lines = []
        for off, _ in hottest(match.edges):
            l = ctx.location(off)
            if l is not None and l.file == loc.file:
                hot_lines.append(l.line)
        for pname, decl in params:
            if "__restrict__" in decl and "const" in decl:
                continue
            if is_written(lines, pname, first, last):
                continue
            used = any(re.search(r"\b" + re.escape(pname) + r"\b", lines[h - 1]) for h in hot_lines if 0 < h <= len(lines))
            if used:
                return Fix("restrict", loc.file, def_line, {"function": name, "parameter": pname})
        return None
