"""The sm_90 latency table is the H100 measurement, and real sm_90 instructions get the right class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.sass import arch as archmod
from gpa_lsp.sass import load_program

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "benchmarks" / "latency" / "latency.h100.json"

MIX = r"""
#include <cuda_fp16.h>
__constant__ float coef[64];
__global__ void mix(const float* __restrict__ a, double* d, float* o, int* io, const int* idx, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    float x = a[t];
    tile[threadIdx.x] = x;
    __syncthreads();
    float y = tile[(threadIdx.x * 7) & 255] * coef[idx[t] & 63];
    y = __expf(y) + __fdividef(1.0f, y);
    double dv = d[t] * (double)y + 1.0;
    d[t] = dv;
    __half2 h = __floats2half2_rn(x, y);
    h = __hfma2(h, h, h);
    int p = __popc(io[t]) + (int)y + __float2int_rz(x);
    p = __shfl_sync(0xffffffff, p, (t + 1) & 31);
    o[t] = y + __low2float(h) + (float)p + (t < n ? 1.0f : 2.0f);
}
"""

#: opcode prefix (as nvdisasm prints it) -> class it must get
EXPECTED = {
    "IADD3": "integer", "LOP3.LUT": "integer", "IMAD.WIDE": "imad_wide", "IMAD": "imad",
    "ISETP": "predicate", "FSETP": "predicate", "FADD": "fp32", "FMUL": "fp32", "FFMA": "fp32",
    "HFMA2": "fp16", "DFMA": "fp64", "MUFU.RCP": "mufu", "MUFU.EX2": "mufu",
    "F2F.F64.F32": "conversion", "F2I": "conversion", "I2FP": "alu_conversion", "POPC": "popc",
    "SHFL": "shuffle", "LDS": "shared_memory", "STS": "shared_memory", "LDG": "memory",
    "STG": "memory", "LDC": "constant_memory", "S2R": "special_register", "BAR.SYNC": "barrier",
    "EXIT": "control",
}


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(RECORDED.read_text())


@pytest.fixture(scope="module")
def mix_kernel(build_cubin):
    prog = load_program(build_cubin(MIX, arch="sm_90", name="mix"))
    assert prog.sm == 90
    return prog.function("_Z3mixPKfPdPfPiPKii")


def test_recording_is_an_h100(recorded):
    assert recorded["sm"] == 90 and "H100" in recorded["device"]


def test_sm90_table_equals_the_recorded_measurement(recorded):
    lat = recorded["latencies"]
    measured_classes = set(archmod.SM90_SOURCES)
    assert measured_classes <= set(archmod.LATENCY_SM90)
    for cls, (lower_keys, upper_keys) in archmod.SM90_SOURCES.items():
        lo, hi, _ = archmod.LATENCY_SM90[cls]
        assert lo == round(min(lat[k] for k in lower_keys)), cls
        assert hi == round(max(lat[k] for k in upper_keys)), cls
        assert lo <= hi, cls
    # every measured instruction feeds some class (an L2 hit lies between the memory bounds)
    used = {k for lows, highs in archmod.SM90_SOURCES.values() for k in lows + highs}
    assert set(lat) == used | {"LDG_L2_hit"}
    # unmeasured classes keep the default bounds
    for cls in set(archmod.LATENCY_SM90) - measured_classes:
        assert archmod.LATENCY_SM90[cls] == archmod.LATENCY[cls]


def test_memory_bounds_are_hit_to_dram(recorded):
    lat = recorded["latencies"]
    lo, hi, fixed = archmod.LATENCY_SM90["memory"]
    assert (lo, hi, fixed) == (round(lat["LDG_L1_hit"]), round(lat["LDG_DRAM"]), False)
    assert lat["LDG_L1_hit"] < lat["LDG_L2_hit"] < lat["LDG_DRAM"]
    assert archmod.LATENCY_SM90["shared_memory"][:2] == (round(lat["LDS"]), round(lat["LDS_conflict32"]))


def test_classes_of_real_sm90_instructions(mix_kernel):
    seen: dict[str, str] = {}
    for ins in mix_kernel.instructions:
        for prefix, cls in EXPECTED.items():
            if ins.opcode.startswith(prefix) and prefix not in seen:
                # the longest matching prefix decides (IMAD.WIDE before IMAD)
                best = max((p for p in EXPECTED if ins.opcode.startswith(p)), key=len)
                if best == prefix:
                    seen[prefix] = archmod.latency_class(ins)
    assert set(seen) == set(EXPECTED), f"opcodes missing from the cubin: {set(EXPECTED) - set(seen)}"
    assert seen == EXPECTED


def test_sm90_latency_of_real_instructions_uses_the_measured_table(mix_kernel):
    by_op = {}
    for ins in mix_kernel.instructions:
        by_op.setdefault(ins.base_opcode, ins)
    ldg = next(i for i in mix_kernel.instructions if i.opcode.startswith("LDG"))
    lo, hi, fixed = archmod.latency(ldg, 90)
    assert (lo, hi) == archmod.LATENCY_SM90["memory"][:2] and not fixed
    assert archmod.latency(ldg) == (28, 1024, False)           # no arch: GPA's table
    assert archmod.latency(ldg, 80) == (28, 1024, False)
    assert archmod.latency(ldg, 100) == (28, 1024, False)      # Blackwell: not measured
    mufu = by_op["MUFU"]
    assert archmod.latency(mufu, 90) == (*archmod.LATENCY_SM90["mufu"][:2], False)
    assert archmod.latency(mufu, 80) == (14, 14, False)
    imad = next(i for i in mix_kernel.instructions if i.opcode == "IMAD")
    assert archmod.latency(imad, 90)[:2] == archmod.LATENCY_SM90["imad"][:2]
    assert archmod.latency(imad, 80)[:2] == (5, 5)
    # the control code decides variability: POPC carries a write scoreboard on sm_90
    popc = by_op["POPC"]
    assert popc.control.write_barrier is not None and archmod.latency(popc, 90)[2] is False
    dfma = by_op["DFMA"]
    assert dfma.control.write_barrier is None and archmod.latency(dfma, 90)[2] is True
