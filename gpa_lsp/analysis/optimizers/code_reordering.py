"""Code Reordering: dependency latency in a loop or function that moving loads earlier could hide.

Why Eq. 5's A is the warp's own issue samples here: a latency sample is a cycle in which the
scheduler issued nothing, i.e. every one of its k warps was stalled. A reorder changes one warp's
instruction order; what it can put into such a cycle is that warp's own independent
instructions, moved earlier. The k warps run the same code, and the samples show them stalling
together (that is why the cycle is idle), so their moved instructions land in the same idle
cycles: the cycles filled are at most one warp's issue cycles in the scope -- its ``selected``
samples (~ A/k) -- not the scheduler's issued samples A (which would assume the k warps' moved
work fills k disjoint sets of idle cycles). With one warp per scheduler both are the same.
"""

from __future__ import annotations

from .base import Estimator, Match, Optimizer, loop_scopes_for, match_edges

DEPENDENCY = ("memory_dependency", "execution_dependency")


class CodeReordering(Optimizer):
    id = "code_reordering"
    title = "Code Reordering"
    method = Estimator.scoped_latency_hiding
    generic = True
    mlp_factor = None   # hoisting a load (a prefetch) may put any number of them in flight
    suggestion = ("Instructions wait on results that were issued just before. Issue loads earlier (prefetch "
                  "the next iteration's data, load before a barrier), and interleave independent work "
                  "between a load and its first use.")

    def match(self, ctx) -> Match | None:
        m = match_edges(ctx.edges_where(reasons=DEPENDENCY), lambda e: e.category != "self" and e.latency > 0)
        if m is None:
            return None
        return Match(m.edges, m.samples, m.latency,
                     loop_scopes_for(ctx, m.edges, function_scope=True, own_issue=True))
