"""Register Reuse: stalls blamed on local-memory loads that are register spills."""

from __future__ import annotations

import re

from .base import Match, Optimizer, match_edges

_STACK = re.compile(r"\[\s*R1\s*(?:\+\s*(?:0x[0-9a-fA-F]+|\d+)\s*)?\]")


def is_spill(ins) -> bool:
    """A spill addresses the stack frame at a constant offset: ``[R1+0x10]``."""
    return any(_STACK.fullmatch(op.strip()) for op in ins.operands if op.strip().startswith("["))


class RegisterReuse(Optimizer):
    id = "register_reuse"
    title = "Register Reuse"
    suggestion = ("Stalls come from local memory loads of spilled registers. Reduce register pressure: "
                  "shorten live ranges, split the kernel, or allow more registers (__launch_bounds__ / -maxrregcount).")

    def match(self, ctx) -> Match | None:
        def keep(e):
            site = ctx.site(e.def_)
            return e.category == "local_memory" and site is not None and is_spill(site.instruction)
        return match_edges(ctx.edges, keep)
