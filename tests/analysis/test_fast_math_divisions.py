"""Fast Math on IEEE float divisions (``fast_math.library_weights``), on the recorded calibration case
perona_malik with its fast_math variant timed (benchmarks/accuracy/timings.json)."""

from __future__ import annotations

from gpa_lsp.analysis.optimizers.fast_math import library_weights

from bundle_contexts import case_hottest, measured_speedup


def test_ieee_divisions_are_fast_math_work():
    """perona_malik divides by the run-time kappa and by 1 + r^2 in its tap loop: each division is
    an inlined FCHK, MUFU.RCP, four FFMA and a branch to the slow path, which --use_fast_math makes
    MUFU.RCP and FMUL. Before, only the expf line was Fast Math's (1.20x); measured 2.07x."""
    achieved = measured_speedup("perona_malik", "fast_math")
    ctx, report = case_hottest("perona_malik", "ncu")
    weights = {line: w for (_, line), w in library_weights(ctx).items()}
    assert set(weights) >= {21, 22, 23} and all(w > 0.5 for w in weights.values())
    a = next(a for k in report.kernels for a in k.advice if a.optimizer == "fast_math")
    assert report.kernels[0].advice[0] is a
    assert 1.6 < a.estimated_speedup < 1.3 * achieved


def test_a_division_by_a_loop_invariant_value_is_strength_reductions():
    """perona_malik's ``d / kappa`` (kappa a kernel argument) is redone every tap: MUFU.RCP, two FFMA
    on the divisor alone, FCHK, three FFMA and the slow-path branch. Hoisting 1 / kappa (inv_kappa)
    measured 1.25x; before, Strength Reduction saw only the MUFU's stalls (1.01x). Its ``g / (1 + r^2)``
    changes every tap (an induction variable, written again in the body) and is not matched."""
    from gpa_lsp.analysis.optimizers.strength_reduction import division_weights, invariant_divisions
    achieved = measured_speedup("perona_malik", "inv_kappa")
    assert 1.2 < achieved < 1.3
    ctx, report = case_hottest("perona_malik", "ncu")
    lines = {line for (_, line) in invariant_divisions(ctx)}
    assert lines == {21}
    assert {line for (_, line) in division_weights(ctx)} == {21}
    a = next(a for k in report.kernels for a in k.advice if a.optimizer == "strength_reduction")
    assert a.location.line == 21 and abs(a.estimated_speedup - achieved) / achieved < 0.1
