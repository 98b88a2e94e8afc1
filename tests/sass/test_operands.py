"""Register sets and memory widths of wide, atomic and tensor-core instructions in real nvcc output."""

from __future__ import annotations

import pytest

from gpa_lsp.sass import load_program

WIDE = r"""
#include <mma.h>
__global__ void wide(float* a, int* c, unsigned long long* u, float4* v) {
    int t = threadIdx.x;
    __shared__ half hs[16 * 16 * 2];
    atomicAdd(&a[t % 7], 1.0f);                 // RED: no destination
    int old = atomicAdd(&c[t], 3);              // ATOMG: returns a value
    atomicAdd(u, 1ull);
    float4 q = v[t];                            // LDG.E.128
    q.x += __shfl_xor_sync(0xffffffff, q.y, 1);
    v[t + 1] = q;
    c[t + 1] = old;
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, hs, 16);
    wmma::load_matrix_sync(fb, hs + 256, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(a + 64, fc, 16, wmma::mem_row_major);
}
"""


def _regs(first: str, n: int) -> set[str]:
    k = int(first.lstrip("R"))
    return {f"R{k + i}" for i in range(n)}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_wide_atomic_and_mma_operands(build_cubin, arch):
    f = load_program(build_cubin(WIDE, arch=arch, name="wide")).function("_Z4widePfPiPyP6float4")
    ins = f.instructions
    ld128 = next(i for i in ins if i.base_opcode == "LDG" and ".128" in i.opcode)
    assert ld128.dsts == _regs(ld128.operands[0], 4) and ld128.memory.width == 128
    st128 = next(i for i in ins if i.base_opcode == "STG" and ".128" in i.opcode)
    assert _regs(st128.operands[-1], 4) <= st128.srcs and not st128.dsts
    red = [i for i in ins if i.base_opcode in ("RED", "REDG")]
    assert red and all(not i.dsts and i.memory.atomic and i.memory.store for i in red)
    red64 = next(i for i in red if ".64" in i.opcode)
    assert _regs(red64.operands[-1], 2) <= red64.srcs
    atom = next(i for i in ins if i.base_opcode in ("ATOMG", "ATOM"))
    reg_dst = next(o for o in atom.operands if o.startswith("R"))
    assert atom.dsts == {reg_dst} and atom.memory.atomic and atom.memory.load
    ldsm = [i for i in ins if i.base_opcode == "LDSM"]
    assert ldsm and all(i.dsts == _regs(i.operands[0], 4) and i.memory.space == "shared" for i in ldsm)
    hmma = [i for i in ins if i.base_opcode == "HMMA"]
    assert hmma and all(_regs(i.operands[0], 4) == i.dsts for i in hmma if ".F32" in i.opcode)
    shfl = next(i for i in ins if i.base_opcode == "SHFL")
    assert len([d for d in shfl.dsts if d.startswith("R")]) == 1


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_memory_operand_and_its_address_registers(build_cubin, arch):
    """Every load, store and atomic of real nvcc output has one memory operand; the registers in its
    brackets are read by the instruction (64-bit addresses as register pairs), and a store's data
    registers are not among them."""
    from gpa_lsp.sass.operands import address_registers, memory_operand
    prog = load_program(build_cubin(WIDE, arch=arch))
    seen = 0
    for fn in prog.functions:
        for ins in fn.instructions:
            if ins.memory is None or ins.memory.space == "constant":
                continue
            op = memory_operand(ins.operands)
            assert op is not None and op.endswith("]") and "(*" not in op, ins.text
            regs = address_registers(op)
            assert regs <= ins.srcs, (ins.text, regs, ins.srcs)
            if ins.memory.space == "global":
                assert len([r for r in regs if r.startswith("R")]) == 2, ins.text   # R<n>.64
            if ins.memory.store and not ins.memory.load and ins.base_opcode in ("STG", "STS"):
                data = ins.srcs - regs
                assert data and not (data & regs), ins.text
            seen += 1
    assert seen >= 8
    assert address_registers(None) == frozenset()
