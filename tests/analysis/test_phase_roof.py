"""The memory-parallelism roof of a kernel without a loop over its loads (analysis/parallelism.py,
``_hottest_phase``): a block is the streaming loop's iteration, and the loads of one stretch between
block barriers are what a warp keeps in flight."""

from __future__ import annotations

from case_context import case_context

from gpa_lsp.analysis.parallelism import mlp_bound, roof


def test_layernorm_counts_the_loads_before_its_first_barrier():
    """layernorm_rows: 4 floats per thread loaded before the first reduction (4 x 128 bytes a
    warp), 64 warps per SM: 32 KB in flight; the gamma and beta loads after the last barrier are
    another phase, not in flight with them. The block writes its row in the last phase (a per-thread
    address), so the kernel's DRAM share is a copy's: the copy curve at 32 KB (85%, not a read's 92%)."""
    ctx = case_context("layernorm_rows")
    r = roof(ctx)
    assert r is not None and r.warp_bytes == 4 * 128 and r.warps == 64 and r.pattern == "copy"
    bound, reach = mlp_bound(ctx, 1.0)
    assert reach == r.attainable_pct and 1.2 < bound < 1.3


def test_a_loop_with_loads_keeps_its_roof():
    """permute_divmod (calibration): the roof still comes from its loop."""
    ctx = case_context("permute_divmod")
    r = roof(ctx)
    assert r is not None and ctx.loop_of(r.loop_header) is not None
