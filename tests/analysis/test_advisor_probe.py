"""The advisor on real data: shared/samples/probe.cu built here and its Nsight Compute samples from an H100."""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.advisor import analyze, build_context
from gpa_lsp.analysis.sources import make_reader
from probe_data import PROBE_CSV, PROBE_CU, normalized_sass, read_ncu_source_csv


@pytest.fixture(scope="module")
def report(probe):
    program, profile = probe
    return analyze({program.cubin_sha256: program}, profile)


def _kernel(report, short):
    return next(k for k in report.kernels if k.demangled.startswith(short + "("))


def test_cubin_built_here_matches_the_recorded_sass(probe_program):
    rows = read_ncu_source_csv(PROBE_CSV)
    for f in probe_program.functions:
        recorded = next(v for k, v in rows.items() if k.split("(")[0] == f.demangled.split("(")[0])
        assert [normalized_sass(i.text) for i in f.instructions] == [normalized_sass(r["source"]) for r in recorded]


def test_every_sample_is_blamed_exactly_once(probe):
    program, profile = probe
    for k in profile.kernels:
        ctx = build_context(program, k, profile.pcs_of(k.name), profile.device, make_reader())
        observed = sum(p.total for p in profile.pcs_of(k.name))
        assert ctx.total == observed > 0
        assert sum(e.stall for e in ctx.edges) == pytest.approx(observed)
        assert sum(e.latency for e in ctx.edges) == pytest.approx(sum(p.latency for p in profile.pcs_of(k.name)))


def test_stencil_double_literals_rank_strength_reduction_first(report):
    k = _kernel(report, "stencil")
    top = k.advice[0]
    assert top.optimizer == "strength_reduction"
    assert top.estimated_speedup > 1.1
    text = PROBE_CU.read_text().splitlines()[9]
    assert top.fix is not None and top.fix.kind == "float_literal" and top.fix.line == 10
    cols = [tuple(c) for c in top.fix.params["columns"]]
    assert [text[s:e] for s, e in cols] == ["0.5", "2.0"]
    # the blamed defs are the F2F/DADD/DFMA of lines 9-10
    assert {h.def_.line for h in top.hotspots} <= {9, 10}


def test_localarr_local_memory_blamed_on_the_indexed_read(report):
    k = _kernel(report, "localarr")
    adv = {a.optimizer: a for a in k.advice}
    assert "local_array" in adv and "register_reuse" not in adv
    assert adv["local_array"].location.line == 22
    line22 = next(l for l in k.lines if l.line == 22)
    assert dict(line22.blamed_by_category).get("local_memory", 0) > 0


def test_chase_is_latency_bound_on_the_dependent_loads(report):
    k = _kernel(report, "chase")
    assert k.limiter == "latency"
    assert dict(k.stall_breakdown)["memory_dependency"] / k.samples > 0.5
    # nvcc unrolled the chase's run-time loop itself (an unrolled body and its remainder on line 32),
    # and the chain p = next[p] is carried from one iteration to the next: a `#pragma unroll 4`
    # asks for what the compiler did (benchmarks/unroll), so Loop Unrolling says nothing
    assert "loop_unrolling" not in {a.optimizer for a in k.advice}


def test_line_stats_carry_sass_and_blame_origin(report):
    k = _kernel(report, "stencil")
    line10 = next(l for l in k.lines if l.line == 10)
    assert line10.samples == sum(n for _, _, n in line10.instructions)
    assert any("DFMA" in text for _, text, _ in line10.instructions)
    assert line10.blamed > 0 and line10.blamed_from and all(f.endswith("probe.cu") for f, _, _ in line10.blamed_from)
    assert sum(n for _, n in line10.by_reason) == line10.samples
