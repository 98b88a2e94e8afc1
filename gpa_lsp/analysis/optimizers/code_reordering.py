"""Code Reordering: dependency latency in a loop or function that moving loads earlier could hide.

Why Eq. 5's A is the warp's own issue samples here: a latency sample is a cycle in which the
scheduler issued nothing, i.e. every one of its k warps was stalled. A reorder changes one warp's
instruction order; what it can put into such a cycle is that warp's own independent
instructions, moved earlier. The k warps run the same code, and the samples show them stalling
together (that is why the cycle is idle), so their moved instructions land in the same idle
cycles: the cycles filled are at most one warp's issue cycles in the scope -- its ``selected``
samples (~ A/k) -- not the scheduler's issued samples A (which would assume the k warps' moved
work fills k disjoint sets of idle cycles). With one warp per scheduler both are the same.

Why a prefetch is paid in issue slots (``prefetch_ceiling``): hiding a load's latency inside a loop
means issuing it an iteration early, and the loop then computes, one iteration ahead, what decides
the next iteration's addresses and guards, and carries the prefetched values in registers. Where the
scheduler idles that work fills idle slots; where the kernel is issue-bound it adds to the time. The
calibration case kernels/structure_tensor (a run-time 5 x 5 tap nest over 8 bands, issue at 82% of
peak) carried the advice out as a developer would: 45 instructions per tap for ~20, 0.43x, against
1.05x estimated. So the estimate is held to what the issue slots allow: the time is at least the
issue share U times (1 + a), a the issue work the prefetch adds per iteration -- the matched loads'
address and guard arithmetic in the loop body (their backward slice there) plus one move per load,
over the body's instructions (latency-weighted over the loops). structure_tensor: a = 0.18 and 0.72
in its two tap loops, ceiling 0.87x, no advice. The calibration cases where the advice helped run at
28-44% issue and keep their estimates (prefetch_reorder 1.13x, ceiling 1.51x; kde_tiled 1.05x, 2.07x;
btree_search 1.02x, 2.41x; nbody_direct 1.26x, 3.6x). benchmarks/reorder/prefetch_probe.cu checked
the bound on one tap nest at 66-83% issue: the prefetch never beat it, and the slice's a stayed a
little under the instructions the prefetch really added (a bound, not a price).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import replace

from ...sass.opcodes import BRANCHES
from ..deletion import address_registers
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
        m = Match(m.edges, m.samples, m.latency,
                  loop_scopes_for(ctx, m.edges, function_scope=True, own_issue=True))
        # found once: the estimate, its range and the text all hold to it
        return replace(m, data={"ceiling": prefetch_ceiling(ctx, m)})

    def estimate(self, ctx, match: Match) -> float:
        return min(super().estimate(ctx, match), match.data["ceiling"])

    def estimate_range(self, ctx, match: Match, point: float) -> tuple[float, float] | None:
        """The latency range, held to the same ceiling as the estimate."""
        rng = super().estimate_range(ctx, match, point)
        if rng is None:
            return None
        cap = max(point, match.data["ceiling"])
        return min(rng[0], cap), min(rng[1], cap)

    def describe(self, ctx, match: Match) -> str:
        """The suggestion, and where the issue slots hold the estimate, why it is no higher."""
        ceiling = match.data["ceiling"]
        if ceiling >= super().estimate(ctx, match):
            return self.suggestion
        issue = ctx.kernel.throughput.pct("issue")
        return (f"{self.suggestion} At most {ceiling:.2f}x here: the kernel issues at {issue:.0f}% of its "
                f"peak, and loading an iteration early also computes the next iteration's addresses and "
                f"guards, in issue slots the kernel already uses.")


def _address_slice(function, body: frozenset[int], loads: list[int]) -> set[int]:
    """Indices of the loop body's arithmetic the loads' addresses and guards come from: their backward
    slice in the body, each use reaching back to the nearest def before it in layout order, else to
    the body's last def (carried around the back edge); registers defined outside the loop stop it."""
    ins = function.instructions
    order = sorted(body)
    pos = {k: n for n, k in enumerate(order)}
    defs: dict[str, list[int]] = {}          # register -> positions in the body defining it, ascending
    for n, k in enumerate(order):
        for r in ins[k].dsts:
            defs.setdefault(r, []).append(n)

    def reaching(k: int, r: str) -> int | None:
        at = defs.get(r)
        if not at:
            return None
        i = bisect_left(at, pos[k])
        return order[at[i - 1] if i > 0 else at[-1]]     # the nearest before, else the last (carried)

    todo: list[tuple[int, str]] = []
    for k in loads:
        todo += [(k, r) for r in address_registers(ins[k])]
        if ins[k].predicate:
            todo.append((k, ins[k].predicate))
    seen: set[tuple[int, str]] = set()
    out: set[int] = set()
    while todo:
        use = todo.pop()
        if use in seen:
            continue
        seen.add(use)
        d = reaching(*use)
        if d is None or d in out or ins[d].memory is not None or ins[d].base_opcode in BRANCHES:
            continue
        out.add(d)
        todo += [(d, r) for r in ins[d].srcs]
    return out


def prefetch_ceiling(ctx, match: Match) -> float:
    """1 / (U (1 + a)): the most a prefetch of the matched loads can gain when the issue work it
    adds (``a``, see the module docstring) is paid in issue slots at the kernel's issue share U of
    peak; inf without an issue measurement or a matched load waited on in its own loop."""
    t = ctx.kernel.throughput
    u = t.pct("issue") if t is not None else None
    if not u:
        return math.inf
    loops: dict[int, list] = {}          # header -> [scope, matched latency, load offsets]
    for e in match.edges:
        site = ctx.site(e.def_)
        lp = ctx.loop_of(e.def_)
        if site is None or lp is None or site.instruction.memory is None or ctx.loop_of(e.use) is not lp:
            continue
        got = loops.setdefault(lp.header_offset, [lp, 0.0, set(), site.function])
        got[1] += e.latency
        got[2].add(site.index)
    weight = sum(g[1] for g in loops.values())
    if weight <= 0:
        return math.inf
    a = 0.0
    for lp, latency, loads, fn in loops.values():
        added = len(_address_slice(fn, lp.instructions, sorted(loads))) + len(loads)
        a += latency / weight * added / max(1, len(lp.instructions))
    return 1.0 / (u / 100.0 * (1.0 + a))
