"""Code Reordering: dependency latency in a loop or function that moving loads earlier could hide."""

from __future__ import annotations

from .base import Match, Optimizer, loop_scopes_for, match_edges

DEPENDENCY = ("memory_dependency", "execution_dependency")


class CodeReordering(Optimizer):
    id = "code_reordering"
    title = "Code Reordering"
    method = "scoped_latency_hiding"
    suggestion = ("Instructions wait on results that were issued just before. Issue loads earlier (prefetch "
                  "the next iteration's data, load before a barrier), and interleave independent work "
                  "between a load and its first use.")

    def match(self, ctx) -> Match | None:
        m = match_edges(ctx.edges, lambda e: e.reason in DEPENDENCY and e.category != "self" and e.latency > 0)
        if m is None:
            return None
        return Match(m.edges, m.samples, m.latency, loop_scopes_for(ctx, m.edges, function_scope=True))
