"""Row gathers (analysis/gathers.py ``row_gathers``): a thread that walks a gathered row whole is a
walk a warp per row coalesces, not a gather. On real recordings: the calibration case gnn_aggregate
(H200) and the element and field gathers of spmv_csr_scalar and particle_gather (H100), which stay
gathers."""

from __future__ import annotations

from bundle_contexts import case_hottest, h200_probe
from gpa_lsp.analysis.gathers import gather_roots, gathers, row_gather_roof, row_gathers, row_runs


def test_a_thread_walking_whole_gathered_rows_is_a_row_gather():
    """gnn_aggregate: 32 loads at offsets 0..124 from the base the neighbour id gives, every one of
    them a row gather; the id load itself (nbr[v * 16 + k]) is no gather at all."""
    ctx, _ = case_hottest("gnn_aggregate")
    rows = row_gathers(ctx)
    assert len(rows) == 32
    assert rows <= frozenset(gather_roots(ctx)) and not (rows & gathers(ctx))
    lines = {ctx.site(o).instruction.loc.line for o in rows}
    assert lines == {18}


def test_element_and_field_gathers_stay_gathers():
    """spmv_csr_scalar's x[col[j]] (4 bytes a row) and particle_gather's fields (12-16 bytes of a
    record): no line read contiguously, no row gather."""
    for case in ("spmv_csr_scalar", "particle_gather"):
        ctx, _ = case_hottest(case)
        assert gathers(ctx) and not row_gathers(ctx), case


def test_gnn_aggregate_gets_coalescing_first_with_its_measured_range():
    """The warp per node measured 5.65x by kernel durations (5.46x by events) on the H200; before the
    rows were walks the advice was 1.09x."""
    _, report = case_hottest("gnn_aggregate")
    k = report.kernels[0]
    top = k.advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 18
    assert 5.0 < top.estimated_speedup < 7.0


def test_gathered_rows_reach_the_row_gather_probes_dram_share():
    """The row-gather probe (benchmarks/coalescing/rowgather_probe.cu, H200): random rows read a warp
    per row reach less of DRAM's peak than a sequential stream, 64-byte rows far less. gnn_aggregate's
    rows are 128 bytes (32 floats): its roof is the probe's 128-byte share, which its warp per node
    ran at (76.2% by ncu), and the advice says it is bounded by the rows."""
    best = {}
    for r in h200_probe("rowgather"):
        size = int(r["config"].rsplit("_r", 1)[1])
        best[size] = max(best.get(size, 0.0), r["dram_pct"])
    assert best[64] < 60 < 75 < best[128] < best[256] and max(best.values()) < 90
    ctx, report = case_hottest("gnn_aggregate")
    assert max(b for _, b in row_runs(ctx)) == 128
    assert row_gather_roof(ctx) == best[128]
    top = report.kernels[0].advice[0]
    assert top.bounded_by == "rows" and abs(top.bounded_pct - best[128]) < 1e-9
    assert "gathered rows" in top.bound_text()


def test_rows_must_be_most_of_the_loads_for_their_roof():
    """spmv_csr_scalar gathers x[col[j]] element by element: no row runs, no row roof."""
    ctx, _ = case_hottest("spmv_csr_scalar")
    assert not row_runs(ctx) and row_gather_roof(ctx) is None
