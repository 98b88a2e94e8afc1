"""Warp Divergence: samples on instructions that run with a fraction of the warp's lanes active."""

from __future__ import annotations

from .base import Match, Optimizer, match_edges


def inactive_share(pc) -> float:
    if pc is None or not pc.executed or pc.thread_executed is None:
        return 0.0
    return max(0.0, 1.0 - pc.thread_executed / (32.0 * pc.executed))


class WarpDivergence(Optimizer):
    id = "warp_divergence"
    title = "Warp Divergence"
    suggestion = ("Lanes of a warp take different paths, so each path runs with part of the warp idle. "
                  "Make the branch condition uniform per warp (reorder data, sort work, or make lanes do "
                  "the same amount of work).")

    def match(self, ctx) -> Match | None:
        pcs = ctx.pcs
        return match_edges(ctx.edges, lambda e: inactive_share(pcs.get(e.use)))
