"""A divergent loop converged with a warp per item (optimizers/warp_divergence.py,
``converged_executions``) against the H100 (benchmarks/divergence/items.cu).

The probe measured that a warp per item takes at least one warp iteration per item: its time
follows sum ceil(d / 32), not the lane iterations / 32, so short items leave lanes idle and the
fix cannot reach the full divergence gain. The model counts a converged loop instruction's warp
executions as at least the items that run it.
"""

from __future__ import annotations

import json
from pathlib import Path

from case_context import case_context as _context

from gpa_lsp.analysis.optimizers.warp_divergence import (_divergent_trip_count, converged_executions,
                                                         vanishing_share)

ROOT = Path(__file__).resolve().parents[2]


def _rows() -> dict[str, dict]:
    text = (ROOT / "benchmarks" / "divergence" / "items.h100.jsonl").read_text()
    return {f"{r['dist']}{r['d']}": r for r in map(json.loads, text.splitlines()) if r}


def test_a_warp_per_item_takes_an_iteration_per_item():
    r = _rows()
    assert r["u8"]["lane_iters"] == 8 * r["u1"]["lane_iters"]
    assert r["u8"]["warp_ms"] < 1.3 * r["u1"]["warp_ms"]          # 8x the lane iterations, < 1.3x the time
    # short items: the converged kernel is slower than the divergent one; 32 and more: faster
    assert all(r[k]["warp_ms"] > r[k]["thread_ms"] for k in ("u1", "u4", "u8", "u16", "mix8"))
    assert all(r[k]["warp_ms"] < r[k]["thread_ms"] for k in ("u32", "u64", "mix32"))


def test_the_model_counts_the_items_on_bfs():
    """bfs_frontier's neighbour loop (a thread per vertex, 1-2047 edges): every copy of a loop
    operation keeps at least the items' warp executions, so less vanishes than the inactive share."""
    ctx = _context("bfs_frontier")
    fn = ctx.blames[0].function
    loops = ctx.loops[fn.name]
    assert loops and all(_divergent_trip_count(ctx, fn, lp) for lp in loops)
    after = converged_executions(ctx)
    items = max(p.thread_executed for o, p in ctx.pcs.items() if p.thread_executed and ctx.loop_of(o) is None)
    groups: dict[tuple, list[float]] = {}
    for o, n in after.items():
        ins = ctx.site(o).instruction
        g = groups.setdefault((ins.loc.line if ins.loc else None, ins.opcode), [0.0, 0.0])
        g[0] += n
        g[1] += ctx.pcs[o].thread_executed
    assert groups and all(v >= min(items, lanes) * 0.999 for v, lanes in groups.values())
    assert max(v for v, _ in groups.values()) >= items * 0.999
    hot = max(after, key=lambda o: ctx.pcs[o].executed)
    p = ctx.pcs[hot]
    assert vanishing_share(ctx, hot) < 1 - p.thread_executed / (32 * p.executed)


def test_a_uniform_loop_in_a_divergent_branch_is_not_counted():
    """parity_divergence: each branch runs a loop of the same trip count for every lane."""
    ctx = _context("parity_divergence")
    fn = ctx.blames[0].function
    assert not any(_divergent_trip_count(ctx, fn, lp) for lp in ctx.loops[fn.name])
    assert converged_executions(ctx) == {}
