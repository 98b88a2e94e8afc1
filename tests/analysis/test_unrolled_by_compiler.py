"""Loop Unrolling leaves out loops nvcc unrolled itself (flow.unrolled_by_compiler, benchmarks/unroll).

The SASS shape is checked on cubins built here with nvcc (the probe of benchmarks/unroll and a
kernel whose inner loop an outer loop's full unroll repeats); the probe's claim on its recorded H200
runs; the advice on the calibration cases' recorded bundles."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.flow import loop_scopes, unrolled_by_compiler
from gpa_lsp.sass import load_program

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "benchmarks/unroll/unroll_probe.cu"

OUTER_UNROLL = """
__global__ void rows4(float* out, const float* x, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#pragma unroll 1
    for (int j = 0; j < n; ++j) acc += x[(size_t(k) * n + j) * 4096 + t] * acc;
  }
  out[t] = acc;
}
"""


def _unrolled(program, name: str) -> list[bool]:
    f = next(f for f in program.functions if f.demangled.startswith(name))
    scopes = loop_scopes(f)
    return [unrolled_by_compiler(scopes, lp) for lp in scopes]


def test_nvcc_unrolls_a_run_time_loop_into_a_body_and_remainders(build_cubin):
    program = load_program(build_cubin(PROBE, flags=("-O3",)))
    # no pragma: nvcc's own unroll (by 16, then 4, then 1): three SASS loops on the line
    assert _unrolled(program, "sum_default") == [True] * 3
    assert _unrolled(program, "dot_default") == [True] * 3
    # the pragma's 4 (the advice's fix) is an unroll too: the advice does not come back after it
    assert _unrolled(program, "void sum_pragma<4>") == [True, True]
    # `#pragma unroll 1`: one loop, not unrolled: what Loop Unrolling's mechanism prices
    assert _unrolled(program, "void sum_pragma<1>") == [False]
    assert _unrolled(program, "void dot_pragma<1>") == [False]


def test_copies_of_one_size_are_an_outer_unroll_not_a_remainder(build_cubin):
    """An inner loop repeated by the full unroll of its outer loop: four SASS loops on one line, of
    one size; each is a loop nvcc did not unroll."""
    program = load_program(build_cubin(OUTER_UNROLL, flags=("-O3",), name="outer"))
    got = _unrolled(program, "rows4")
    assert len(got) == 4 and not any(got)


def _speedups(path: Path) -> dict[tuple[str, int], dict[str, float]]:
    """(kernel, warps per SM) -> {pragma: the default's time over the pragma's} (benchmarks/unroll/table.py)."""
    spec = importlib.util.spec_from_file_location("unroll_table", ROOT / "benchmarks/unroll/table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return {key: ratios for key, (_, ratios) in table.speedups(path).items()}


@pytest.mark.parametrize("run", ["h200.jsonl", "h200.run2.jsonl"])
def test_the_probe_asks_again_for_nothing(run):
    """Recorded on the H200: a pragma on a loop nvcc unrolled gains at most 1.06x and can take twice
    as long; no unrolling at all is what costs (benchmarks/unroll/README.md)."""
    got = _speedups(ROOT / "benchmarks/unroll/recorded" / run)
    assert len(got) == 12
    for (kernel, warps), s in got.items():
        assert s["4"] <= 1.06 and s["8"] <= 1.07, (kernel, warps, s)
        if kernel == "div":
            # a call in the body (the division's slow path): unrolled or not, the same time
            assert all(0.97 <= x <= 1.03 for x in s.values()), (warps, s)
            continue
        assert s["1"] < 0.91, (kernel, warps, s)
        if warps <= 8:
            assert s["4"] < 0.7          # the pragma's 4 lowers nvcc's 16: fewer loads in flight


def test_a_call_in_the_body_keeps_each_iteration_behind_the_last(build_cubin):
    """The div walk unrolled by the pragma: every iteration's load after the previous iteration's call."""
    program = load_program(build_cubin(PROBE, flags=("-O3",)))
    f = next(f for f in program.functions if f.demangled.startswith("void div_pragma<4>"))
    body = max(loop_scopes(f), key=lambda lp: len(lp.instructions))
    seq = [f.instructions[i].base_opcode for i in sorted(body.instructions)
           if f.instructions[i].base_opcode in ("LDG", "CALL")]
    assert seq == ["LDG", "CALL"] * 4


@pytest.mark.parametrize("case", ["nbody_direct", "particle_blocks"])
def test_calibration_loops_with_a_call_get_no_unroll_advice(case):
    """nbody_direct's and particle_blocks' loops call the division's and square root's slow paths;
    their unroll variants measured 0.99x and 1.00x (Loop Unrolling said 1.38x and 1.19x before)."""
    report = advise_bundle(ROOT / "kernels" / case / "recorded" / "cupti.gpabundle")
    for k in report.kernels:
        assert "loop_unrolling" not in {a.optimizer for a in k.advice}, (case, k.name)


@pytest.mark.parametrize("case,bundle", [("gemv_rows", "ncu"), ("head_rmsnorm", "ncu"),
                                         ("horner_rows", "ncu"), ("gemv_resident", "ncu")])
def test_calibration_loops_nvcc_unrolled_get_no_unroll_advice(case, bundle):
    """Their unroll4 variants measured 0.99-1.02x; the advice was 1.03x before the rule."""
    report = advise_bundle(ROOT / "kernels" / case / "recorded" / f"{bundle}.gpabundle")
    assert report.kernels
    for k in report.kernels:
        assert "loop_unrolling" not in {a.optimizer for a in k.advice}, (case, k.name)


def test_a_loop_nvcc_did_not_unroll_keeps_its_advice():
    """lavamd_unroll: the gather loop nvcc left rolled (one SASS loop); unrolling it measured 1.21x."""
    report = advise_bundle(ROOT / "kernels/lavamd_unroll/recorded/cupti.gpabundle")
    k = max(report.kernels, key=lambda k: k.samples)
    assert k.advice[0].optimizer == "loop_unrolling"
    assert 1.2 < k.advice[0].estimated_speedup < 2.0
