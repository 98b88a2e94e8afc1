"""Atomic Privatization: the contention read from the SASS of an atomic's address (real nvcc
output), the measured table it prices with, and its advice on the calibration case's recorded
bundles (radix_digit_count; validation cases are only pinned, tests/cases/test_validation_pins.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.optimizers.atomic_privatization import (
    GLOBAL_REDUCTIONS, MAX_PRIVATE_BINS, distinct_addresses, levels, ratio)
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
    assert ratio("some other GPU", 256)[0] == ratio(H100, 256)[0]   # the H100's table is the default


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_calibration_case_advice(collector):
    spec = tomllib.loads((CASE / "case.toml").read_text())
    report = advise_bundle(CASE / "recorded" / f"{collector}.gpabundle", config=load(CASE))
    kernel = next(k for k in report.kernels if "digit_count" in k.name)
    top = kernel.advice[0]
    assert top.optimizer == "atomic_privatization"
    assert top.location.line == spec["line"] and Path(top.location.file).name == "original.cu"
    # Amdahl over the loop's memory waits (> 99% of the samples) with the measured 1024-counter ratio
    assert 22.0 <= top.estimated_speedup <= ratio(H100, 1024)[0]
    assert "at most 1024 distinct counters" in top.suggestion
    assert top.fix is None                    # a rewrite, not a mechanical edit
    # the measured speedup of the privatized variant (benchmarks/accuracy/timings.json: 32.6x) is
    # inside the range: the high end is the neighbouring, more contended level (256 counters)
    low, high = top.estimate_low, top.estimate_high
    assert low <= 32.6 <= high
