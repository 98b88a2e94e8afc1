"""Code Reordering held to what the issue slots allow (``code_reordering.prefetch_ceiling``), on recorded
calibration bundles with a variant that carries the advice out (timings: benchmarks/accuracy/timings.json).

structure_tensor runs its tap nest at 82% of the issue peak; its prefetch_next (the next tap loaded
an iteration early, as the advice words it) measured 0.43x. The calibration cases whose prefetch
helped run at 28-44% issue and keep their estimates."""

from __future__ import annotations

import json

import pytest

from gpa_lsp.analysis.optimizers import by_id
from gpa_lsp.analysis.optimizers.code_reordering import _address_slice, prefetch_ceiling

from bundle_contexts import ROOT, case_hottest, measured_speedup


def _advice(report, optimizer):
    return next((a for k in report.kernels for a in k.advice if a.optimizer == optimizer), None)


@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_an_issue_bound_tap_nest_gets_no_prefetch_advice(collector):
    """Before: 1.05x (latency hiding), second; measured 0.43x. The prefetch's address and guard
    arithmetic at 82% issue leaves no gain: the ceiling is under 1 and the advice is gone."""
    assert measured_speedup("structure_tensor", "prefetch_next") < 0.6
    ctx, report = case_hottest("structure_tensor", collector)
    assert ctx.kernel.throughput.pct("issue") > 75
    m = by_id("code_reordering").match(ctx)
    assert m is not None and prefetch_ceiling(ctx, m) < 0.95
    assert _advice(report, "code_reordering") is None


@pytest.mark.parametrize("case, variant, low, high", [
    ("prefetch_reorder", "fix", 1.10, 1.16),      # measured 1.13x
    ("kde_tiled", "prefetch", 1.03, 1.08),         # measured 1.14x
])
def test_where_the_scheduler_idles_the_prefetch_keeps_its_estimate(case, variant, low, high):
    assert measured_speedup(case, variant) > 1.05
    ctx, report = case_hottest(case, "cupti")
    assert ctx.kernel.throughput.pct("issue") < 50
    m = by_id("code_reordering").match(ctx)
    assert prefetch_ceiling(ctx, m) > 1.4
    a = _advice(report, "code_reordering")
    assert a is not None and low < a.estimated_speedup < high


def test_the_slice_follows_the_nearest_def():
    """A register the body redefines for other work does not pull that work into the slice:
    structure_tensor's inner tap loop (39 instructions, 8 loads) has 20 of address and guard arithmetic."""
    ctx, _ = case_hottest("structure_tensor", "ncu")
    m = by_id("code_reordering").match(ctx)
    sizes = []
    for e in m.edges:
        lp, site = ctx.loop_of(e.def_), ctx.site(e.def_)
        if lp is not None and site is not None and site.instruction.memory is not None:
            loads = sorted({ctx.site(x.def_).index for x in m.edges
                            if ctx.loop_of(x.def_) is lp and ctx.site(x.def_).instruction.memory is not None})
            sizes.append((len(lp.instructions), len(_address_slice(site.function, lp.instructions, loads))))
    assert sizes and all(0 < s < n for n, s in sizes)


PROBE = ROOT / "benchmarks" / "reorder"


def test_the_probe_never_beats_the_ceiling(build_cubin):
    """benchmarks/reorder/prefetch_probe.cu (H200): one run-time 5 x 5 tap nest with 1, 4 or 16 FMAs per
    tap, plain and with the next tap loaded an iteration early. At ~55 warps per SM the plain kernels
    issue at 66-83% of peak; the ceiling 1 / (U (1 + a)), a from the plain kernel's SASS (its inner
    loop's address-and-guard slice), is under 1 where the prefetch lost (0.57x, 0.68x) and above what
    it measured where it gained (1.05x)."""
    from gpa_lsp.analysis.flow import build_flow, loop_scopes
    from gpa_lsp.sass import load_program
    from gpa_lsp.sass.opcodes import GLOBAL_LOADS

    rows = {(r["config"], r["warps_per_sm"]): r
            for r in json.loads((PROBE / "prefetch_h200.json").read_text())["rows"]}
    program = load_program(build_cubin(PROBE / "prefetch_probe.cu"))
    for f in (1, 4, 16):
        fn = next(x for x in program.functions if x.name.startswith(f"_Z4tapsILi{f}E"))
        inner = max(loop_scopes(fn, build_flow(fn)), key=lambda s: s.depth)
        loads = [k for k in inner.instructions if fn.instructions[k].base_opcode in GLOBAL_LOADS]
        a = (len(_address_slice(fn, inner.instructions, loads)) + len(loads)) / len(inner.instructions)
        plain, pre = rows[f"taps_f{f}", 64], rows[f"taps_f{f}_pre", 64]
        measured = plain["median_ms"] / pre["median_ms"]
        ceiling = 1.0 / (plain["issue_pct"] / 100.0 * (1.0 + a))
        assert measured <= ceiling
        assert (ceiling < 1.0) == (measured < 1.0)
        # the added work the slice predicts is at most what the prefetch really added
        assert 1.0 + a <= pre["instructions"] / plain["instructions"]


@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_where_the_ceiling_holds_the_estimate_the_advice_says_why(collector):
    """particle_blocks (calibration, issue at ~70% of peak): Code Reordering's latency estimate 1.10x
    is held to the ceiling, and so is its range; the text names the issue share."""
    ctx, report = case_hottest("particle_blocks", collector)
    m = by_id("code_reordering").match(ctx)
    ceiling = prefetch_ceiling(ctx, m)
    a = _advice(report, "code_reordering")
    assert a is not None and a.estimated_speedup == pytest.approx(ceiling, abs=0.005) and ceiling < 1.09
    assert a.estimate_high is None or a.estimate_high <= a.estimated_speedup + 1e-9
    assert "At most" in a.suggestion and f"{ctx.kernel.throughput.pct('issue'):.0f}% of its peak" in a.suggestion
