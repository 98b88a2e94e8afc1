"""Row gathers (analysis/gathers.py ``row_gathers``): a thread that walks a gathered row whole is a
walk a warp per row coalesces, not a gather. On real recordings: the calibration case gnn_aggregate
(H200) and the element and field gathers of spmv_csr_scalar and particle_gather (H100), which stay
gathers."""

from __future__ import annotations

from pathlib import Path

from bundle_contexts import contexts_of
from gpa_lsp.analysis.gathers import gather_roots, gathers, row_gathers

ROOT = Path(__file__).resolve().parents[2]


def _context(case: str, collector: str = "ncu"):
    """(the context of the case's hottest kernel, the report) from its recorded bundle."""
    caught, report = contexts_of(ROOT / "kernels" / case / "recorded" / f"{collector}.gpabundle")
    return max(caught, key=lambda c: c.total), report


def test_a_thread_walking_whole_gathered_rows_is_a_row_gather():
    """gnn_aggregate: 32 loads at offsets 0..124 from the base the neighbour id gives, every one of
    them a row gather; the id load itself (nbr[v * 16 + k]) is no gather at all."""
    ctx, _ = _context("gnn_aggregate")
    rows = row_gathers(ctx)
    assert len(rows) == 32
    assert rows <= frozenset(gather_roots(ctx)) and not (rows & gathers(ctx))
    lines = {ctx.site(o).instruction.loc.line for o in rows}
    assert lines == {18}


def test_element_and_field_gathers_stay_gathers():
    """spmv_csr_scalar's x[col[j]] (4 bytes a row) and particle_gather's fields (12-16 bytes of a
    record): no line read contiguously, no row gather."""
    for case in ("spmv_csr_scalar", "particle_gather"):
        ctx, _ = _context(case)
        assert gathers(ctx) and not row_gathers(ctx), case


def test_gnn_aggregate_gets_coalescing_first_with_its_measured_range():
    """The warp per node measured 5.65x by kernel durations (5.46x by events) on the H200; before the
    rows were walks the advice was 1.09x."""
    _, report = _context("gnn_aggregate")
    k = report.kernels[0]
    top = k.advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 18
    assert 5.0 < top.estimated_speedup < 7.0
