"""Short run-time trip counts (``analysis.tripcount``): Loop Unrolling's advice to make a trip count a
compile-time constant, on recorded calibration bundles with the variant that does it
(benchmarks/accuracy/timings.json), and the bound test on loops compiled by nvcc here."""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.tripcount import bound_parameters, short_trips, unroll_factor
from gpa_lsp.sass import load_program

from bundle_contexts import case_hottest, measured_speedup


def _advice(report, optimizer):
    return next((a for k in report.kernels for a in k.advice if a.optimizer == optimizer), None)


@pytest.mark.parametrize("case, line, variant", [("filter2d_5x5", 14, "const_radius"),
                                                 ("structure_tensor", 23, "const_radius")])
@pytest.mark.parametrize("collector", ["ncu", "cupti"])
def test_a_short_tap_loop_is_advised_a_constant_trip_count(case, line, variant, collector):
    """A 5-tap loop nvcc unrolled by 16 (filter2d) or 4 (structure_tensor): the iterations run through
    the peeled copies and the remainder at about twice the unrolled body's instructions per payload.
    Before: Loop Unrolling 1.02-1.06x; the constant radius measured 1.86x and 1.81x. The advice is on
    the tap loop, has no quick fix (a template parameter is the developer's edit), and its range
    runs from the issue slots alone to the point."""
    achieved = measured_speedup(case, variant)
    assert 1.7 < achieved < 2.0
    ctx, report = case_hottest(case, collector)
    trips = short_trips(ctx)
    assert trips and trips[0].line == line
    t = trips[0]
    assert t.run_cost > 1.7 * t.body_cost and 0.4 < t.saved < 0.55
    a = _advice(report, "loop_unrolling")
    assert report.kernels[0].advice[0] is a
    assert a.location.line == line and a.fix is None
    assert "compile-time constant" in a.suggestion and not a.hides_latency
    assert abs(a.estimated_speedup - achieved) / achieved < 0.15
    assert 1.5 < a.estimate_low < a.estimated_speedup == a.estimate_high


def test_a_short_nest_inside_a_long_loop_climbs_to_the_nest():
    """gmm_loglik_pixels: per component (64, run-time) a 3 x 3 nest bounded by the run-time D; nvcc
    unrolls the inner loop by 16 and 4 (neither runs at D = 3) and leaves the middle loop rolled.
    The middle loop's exit test compares against D reloaded in the loop (a ULDC in its body) through
    a uniform predicate: bounded by the same parameter, so the nest climbs to it, and what runs per
    trip is the code on the nest's lines inside the component loop, not the component loop's own
    control. Priced 2.2x (the unrolled body's instructions per payload after); inner_const measured
    4.17x: with D constant nvcc also hoists x[j] out of the component loop and shares x[j] - mu[j]
    between the rows, payload this model keeps (the estimate is the lower side)."""
    achieved = measured_speedup("gmm_loglik_pixels", "inner_const")
    assert 3.8 < achieved < 4.6
    ctx, report = case_hottest("gmm_loglik_pixels", "ncu")
    t = short_trips(ctx)[0]
    assert t.line == 30 and t.factor == 16
    ins = ctx.entry.instructions
    lines = {ins[k].loc.line for k in t.region if ins[k].loc}
    assert {28, 30} <= lines and 39 not in lines     # the nest, not the epilogue after the loop
    a = _advice(report, "loop_unrolling")
    assert report.kernels[0].advice[0] is a and a.location.line == 30
    assert 2.0 < a.estimated_speedup < 2.5 < achieved


def test_a_row_walk_that_runs_its_unrolled_body_is_not_a_short_trip():
    """index_select_rows copies rows of a run-time length with a loop nvcc unrolled by 16: the
    unrolled body issues most of the loop's instructions (the trips are long for the unroll), so
    nothing is left for a constant trip count to fold (SHORT_SHARE)."""
    ctx, _ = case_hottest("index_select_rows", "ncu")
    assert short_trips(ctx) == ()


def test_a_long_grid_stride_loop_is_not_a_short_trip():
    """saxpy_stream's grid-stride loop runs hundreds of trips in its body: nothing to fold."""
    ctx, _ = case_hottest("saxpy_stream", "ncu")
    assert short_trips(ctx) == ()


LOOPS = r"""
__global__ void taps(float* out, const float* in, int r) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
  for (int d = -r; d <= r; ++d) s += in[i + d] * in[i + 2 * d];
  out[i] = s;
}
__global__ void csr(float* out, const float* val, const int* rowptr) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
  for (int k = rowptr[i]; k < rowptr[i + 1]; ++k) s += val[k] * val[k + 7];
  out[i] = s;
}
__global__ void triangle(float* out, const float* in) {
  int i = threadIdx.x;
  float s = 0.f;
  for (int k = 0; k < i; ++k) s += in[k] * in[k + 3];
  out[blockIdx.x * blockDim.x + i] = s;
}
__global__ void stencil(float* out, const float* in, int r, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
  for (int d = -r; d <= r; ++d)
    if (x + d >= 0 && x + d < w) s += in[x + d] * in[d + r];
  out[x] = s;
}
__global__ void rolled(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
#pragma unroll 1
  for (int k = 0; k < n; ++k) s += in[i + k] * in[k];
  out[i] = s;
}
"""


@pytest.fixture(scope="module")
def loops(build_cubin):
    return load_program(build_cubin(LOOPS, name="trip_loops"))


def _loop(program, name):
    from gpa_lsp.analysis.flow import loop_scopes
    fn = next(f for f in program.functions if f.name.startswith(f"_Z{len(name)}{name}"))
    scopes = loop_scopes(fn)
    body = max(scopes, key=lambda s: len(s.instructions))
    return fn, body.instructions


def test_a_trip_count_from_a_kernel_parameter_is_launch_invariant(loops):
    fn, body = _loop(loops, "taps")
    assert unroll_factor(fn, body) >= 2
    assert bound_parameters(fn, body)


@pytest.mark.parametrize("name", ["csr", "triangle"])
def test_a_trip_count_from_memory_or_the_thread_is_not(loops, name):
    """A CSR row's length is loaded; a triangular loop's bound is the thread's index: neither can be
    a compile-time constant."""
    fn, body = _loop(loops, name)
    assert unroll_factor(fn, body) >= 2
    assert bound_parameters(fn, body) is None


def test_a_rolled_loop_has_one_copy(loops):
    """Two loads on one line are two statements' worth, not two iterations: the FFMA has one copy."""
    fn, body = _loop(loops, "rolled")
    assert unroll_factor(fn, body) == 1



def test_a_bounds_check_inside_the_loop_is_not_its_exit_test(loops):
    """A stencil's test whether a tap is inside the row depends on the thread's position, but it
    decides whether the tap runs, not how many: the trip count (2r + 1) is still launch-invariant."""
    fn, body = _loop(loops, "stencil")
    assert bound_parameters(fn, body)
