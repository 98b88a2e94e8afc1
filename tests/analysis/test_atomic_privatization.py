"""Atomic Privatization: the contention read from the SASS of an atomic's address (real nvcc
output), the measured table it prices with, and its advice on the calibration cases' recorded
bundles (radix_digit_count, letter_histogram; validation cases are only pinned:
tests/cases/test_validation_pins.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from case_context import case_context

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.optimizers.atomic_privatization import (
    AtomicPrivatization, GLOBAL_REDUCTIONS, MAX_PRIVATE_BINS, bytes_per_atomic, distinct_addresses, levels, ratio)
from gpa_lsp.config import load
from gpa_lsp.sass import load_program

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "kernels" / "radix_digit_count"
H100 = "NVIDIA H100 80GB HBM3"

KERNELS = r"""
__global__ void bytes(const unsigned char* d, unsigned* h, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&h[d[i]], 1u);
}
__global__ void masked(const unsigned* k, unsigned* h, int n, int s) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&h[(k[i] >> s) & 63], 1u);
}
__global__ void one_counter(const float* x, float* total, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(total, x[i]);
}
__global__ void per_thread(unsigned* h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&h[i], 1u);
}
__global__ void full_keys(const unsigned* k, unsigned* h, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&h[k[i]], 1u);
}
__global__ void slots(const int* x, int* out, int* tail, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0) out[atomicAdd(tail, 1)] = i;
}
"""


def _atomics(build_cubin):
    program = load_program(build_cubin(KERNELS, name="atomics_rules"))
    out = {}
    for f in program.functions:
        for k, ins in enumerate(f.instructions):
            if ins.base_opcode in ("REDG", "RED", "ATOMG", "ATOM"):
                out.setdefault(f.demangled.split("(")[0] if f.demangled else f.name, []).append((f, k, ins))
    return out


def test_distinct_addresses_from_the_address_computation(build_cubin):
    got = _atomics(build_cubin)
    bins = {name: [distinct_addresses(f, k) for f, k, _ in sites] for name, sites in got.items()}
    assert bins["bytes"] == [256]            # a loaded byte (LDG.E.U8) indexes the counters
    assert bins["masked"] == [64]            # LOP3.LUT with 0xfc: 2^6 values
    assert bins["one_counter"] == [1]        # the address is a kernel parameter: one counter
    assert bins["per_thread"] == [None]      # the thread index: no two threads share a counter
    assert bins["full_keys"] == [None]       # a 32-bit loaded key: unknown, not privatized


def test_bytes_loaded_per_atomic_pick_the_measured_key_width(build_cubin):
    got = _atomics(build_cubin)
    widths = {}
    for name in ("bytes", "masked", "one_counter"):
        (f, k, _), = got[name]
        body = range(len(f.instructions))      # these kernels are one loop and its set-up
        widths[name] = bytes_per_atomic(f, body, 1)
    assert widths == {"bytes": 1, "masked": 4, "one_counter": 4}


def test_only_reductions_are_privatized(build_cubin):
    """An atomic whose old value is used (a queue's tail) compiles to ATOMG, not a reduction."""
    got = _atomics(build_cubin)
    (f, k, ins), = got["slots"]
    assert ins.base_opcode not in GLOBAL_REDUCTIONS
    assert distinct_addresses(f, k) == 1      # contended, but not what a per-block copy replaces
    assert all(ins.base_opcode in GLOBAL_REDUCTIONS for name in ("bytes", "masked", "one_counter")
               for _, _, ins in got[name])


def test_table_is_the_measurement_and_interpolates_between_levels():
    rows = levels(H100)
    at = {r["bins"]: r for r in rows}
    assert ratio(H100, 256)[0] == pytest.approx(at[256]["global_ms"] / at[256]["private_ms"], rel=1e-3)
    r, low, high = ratio(H100, 2048)          # between the 1024 and 4096 levels
    assert at[4096]["ratio"] == low < r < high == at[1024]["ratio"]
    assert ratio(H100, MAX_PRIVATE_BINS + 1) is None
    from gpa_lsp.analysis.probe_tables import atomics_name
    from gpa_lsp.profile.model import Device
    other = atomics_name(Device("some other GPU", 80, 108))           # no probed chip: the table's first device
    assert other == H100 and ratio(other, 256)[0] == ratio(H100, 256)[0]
    # 1-byte keys: a lower floor once privatized, the same global atomics: a larger ratio
    one = {r["bins"]: r for r in levels(H100, key_bytes=1)}
    assert ratio(H100, 256, key_bytes=1)[0] == pytest.approx(one[256]["ratio"], rel=1e-3)
    assert one[256]["ratio"] > at[256]["ratio"]
    assert ratio(H100, 1024, key_bytes=1)[0] == ratio(H100, 1024, key_bytes=2)[0]   # next wider measured


# (case, measured speedup of its privatized variant in benchmarks/accuracy/timings.json, counters the
# SASS bounds the address to, bytes loaded per atomic)
CALIBRATION = [("radix_digit_count", 32.6, 1024, 4), ("letter_histogram", 113.0, 256, 1)]


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
@pytest.mark.parametrize("case,achieved,bins,width", CALIBRATION)
def test_calibration_case_advice(collector, case, achieved, bins, width):
    folder = ROOT / "kernels" / case
    spec = tomllib.loads((folder / "case.toml").read_text())
    report = advise_bundle(folder / "recorded" / f"{collector}.gpabundle", config=load(folder))
    kernel = next(k for k in report.kernels if spec["kernel"] in k.name)
    top = kernel.advice[0]
    assert top.optimizer == "atomic_privatization"
    assert top.location.line in {spec["line"], *spec.get("alt_lines", [])}
    assert Path(top.location.file).name == "original.cu"
    assert f"at most {bins} distinct counters" in top.suggestion and f"{width}-byte keys" in top.suggestion
    assert top.fix is None                    # a rewrite, not a mechanical edit
    # the kernel is the loop, its prologue and exit: the shape the microbenchmark measured, so the
    # estimate is the measured ratio but for the issue samples that stay (< 0.1% of the samples:
    # within 5% of the ratio, within 20% of the measured speedup); the low end prices only the
    # loop's memory waits and the exit's drain
    r = ratio(H100, bins, width)[0]
    assert 0.95 * r <= top.estimated_speedup <= r
    assert abs(top.estimated_speedup - achieved) <= 0.2 * achieved
    assert top.estimate_low < 0.97 * r
    assert top.estimate_low <= achieved <= top.estimate_high


def test_prologue_and_exit_are_priced_with_the_loop():
    """radix_digit_count is its loop, a prologue and the exit (which drains the REDs): the match
    holds every wait (the loop's, the prologue's, the drain), not the issue samples (the privatized
    loop issues the same instructions), so the share the measured whole-kernel ratio prices is all
    of the kernel but its issue; the memory waits alone (the low end) leave 0.23% out, which at a
    28x ratio would be 6% of the speedup."""
    ctx = case_context("radix_digit_count", "cupti")
    m = AtomicPrivatization().match(ctx)
    assert m.samples == pytest.approx(ctx.total - ctx.by_category["active"])
    assert 0.99 * ctx.total < m.data["waits"] < 0.998 * ctx.total
    outside = {e.reason for e in m.edges if ctx.loop_of(e.use) is None}
    inside = {e.reason for e in m.edges if ctx.loop_of(e.use) is not None}
    assert "memory_throttle" in outside                  # the exit's drain
    assert {"memory_dependency", "memory_throttle"} <= inside and "active" not in inside | outside


H200 = "NVIDIA H200"


def test_float_adds_cost_the_l2_more_only_where_counters_are_few():
    """benchmarks/atomics/same_counter.cu (H200): a float add on a contended counter takes the L2 2.4x
    an unsigned add's time (one counter, 8 counters), about the same from 32 counters on; in shared
    memory a float add is a compare-and-swap loop (45x on one counter, 2-7x from 8 on). The H100 takes
    the H200's measurement (one chip)."""
    from gpa_lsp.analysis.optimizers.atomic_privatization import op_costs, op_factor
    assert 2.2 < op_factor(H200, 1, False) < 2.6 and 2.2 < op_factor(H200, 8, False) < 2.6
    assert all(0.95 < op_factor(H200, b, False) < 1.1 for b in (32, 256, 1024, 16384))
    assert op_factor(H200, 1, True) > 20 and all(op_factor(H200, b, True) > 1.9 for b in (8, 256, 4096))
    assert op_factor(H200, 2, False) == pytest.approx(2.4, rel=0.05)           # log-interpolated
    assert op_costs(H100) is op_costs(H200)
    one = op_costs(H200)["one_counter_ns"]
    # a second counter in the same 32-byte sector is serialized with the first: the same cost per add
    assert one["f32_pair_sector"] == pytest.approx(one["f32_one"], rel=0.02)
    assert one["u32_pair_sector"] == pytest.approx(one["u32_one"], rel=0.02)


def test_float_reductions_are_read_from_the_opcode(build_cubin):
    from gpa_lsp.analysis.optimizers.atomic_privatization import float_reduction
    got = _atomics(build_cubin)
    assert all(float_reduction(ins) for _, _, ins in got["one_counter"])
    assert not any(float_reduction(ins) for _, _, ins in got["bytes"] + got["masked"])


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_float_class_moments_priced_with_the_shared_copy_they_would_need(collector):
    """class_moments_atomic (blind calibration): a count and two float sums per element at 256 counters
    (a byte label). The unsigned table's 137x assumed integer adds in the shared copy; the float ones
    are compare-and-swap loops there: ~58x, near the shared-memory copy's measured 46.9x (per-thread
    registers for its 8 classes, which the advice names where counters are few and known, 119x)."""
    folder = ROOT / "kernels" / "class_moments_atomic"
    report = advise_bundle(folder / "recorded" / f"{collector}.gpabundle", config=load(folder))
    top = report.kernels[0].advice[0]
    assert top.optimizer == "atomic_privatization" and top.location.line in {21, 22, 23}   # the atomicAdds
    r = ratio(H200, 256, 1)[0]
    assert 0.35 * r < top.estimated_speedup < 0.5 * r
    assert 40.0 < top.estimated_speedup < 70.0
    assert "compare-and-swap" in top.suggestion and "registers" in top.suggestion
