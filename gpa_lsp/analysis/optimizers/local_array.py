"""Local Array: stalls blamed on loads from a dynamically indexed local (stack) array."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges
from .register_reuse import is_spill


class LocalArray(Optimizer):
    id = "local_array"
    title = "Dynamically Indexed Local Array"
    suggestion = ("A per-thread array indexed with a run-time index lives in local memory. Index it with "
                  "compile-time constants (fully unrolled loops), replace it with scalars, or keep it in "
                  "shared memory or registers through warp shuffles.")

    def match(self, ctx) -> Match | None:
        def keep(e):
            site = ctx.site(e.def_)
            return e.category == "local_memory" and site is not None and not is_spill(site.instruction)
        return match_edges(ctx.edges, keep)
