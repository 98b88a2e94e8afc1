"""The lane evaluator (gpa_lsp/sass/lanes.py) on hand-written SASS: each warp's lanes, guards and
shared addresses, and the wavefronts counted from them."""

from __future__ import annotations

from gpa_lsp.sass.model import Function, Instruction
from gpa_lsp.sass.operands import analyze, split_operands
from gpa_lsp.sass.lanes import shared_accesses


def _fn(lines: list[str]) -> Function:
    out = []
    for k, line in enumerate(lines):
        guard, neg = None, False
        if line.startswith("@"):
            g, line = line.split(" ", 1)
            neg = g.startswith("@!")
            guard = g.lstrip("@!")
        opcode, _, rest = line.partition(" ")
        ops = split_operands(rest)
        dsts, srcs, mem = analyze(opcode, ops, guard)
        out.append(Instruction(offset=16 * k, opcode=opcode, operands=ops, predicate=guard, predicate_negated=neg,
                               dsts=dsts, srcs=srcs, memory=mem, text=line))
    return Function(name="k", section=".text.k", entry=True, start=0, size=16 * len(out), instructions=tuple(out))


def test_a_column_read_is_32_way_and_padding_fixes_it():
    fn = _fn(["S2R R0, SR_TID.X",
              "S2UR UR4, SR_CgaCtaId",
              "IMAD R1, R0, 0x80, RZ",          # tid * 32 words: one bank
              "LDS R2, [R1+UR4]",
              "IMAD R3, R0, 0x84, RZ",          # tid * 33 words: every bank once
              "LDS R4, [R3+UR4+0x10]"])
    got = shared_accesses(fn, (64, 1, 1))
    col, padded = got[0x30], got[0x50]
    assert (col.wavefronts, col.ideal, col.warps) == (64, 2, 2)
    assert (padded.wavefronts, padded.ideal) == (2, 2)
    assert col.replay_share == 31 / 32 and padded.replay_share == 0


def test_a_guard_leaves_warps_without_a_wavefront():
    """if (tid < 16) buf[2 * tid * 16] ...: warp 0 runs 16 lanes 32 words apart, warp 1 nothing."""
    fn = _fn(["S2R R0, SR_TID.X",
              "ISETP.GT.U32.AND P0, PT, R0, 0xf, PT",
              "LEA R1, R0, RZ, 0x7",
              "@!P0 LDS R2, [R1]"])
    acc = shared_accesses(fn, (64, 1, 1))[0x30]
    assert (acc.wavefronts, acc.ideal, acc.warps) == (16, 1, 2)


def test_predicates_survive_p2r_and_back():
    fn = _fn(["S2R R0, SR_TID.X",
              "ISETP.GE.AND P1, PT, R0, 0x8, PT",
              "P2R R5, PR, RZ, 0x2",
              "ISETP.NE.AND P1, PT, R0, R0, PT",          # P1 overwritten
              "ISETP.NE.AND P2, PT, R5, RZ, PT",          # restored from R5
              "IMAD.SHL.U32 R1, R0, 0x4, RZ",
              "@P2 STS [R1], R0"])
    acc = shared_accesses(fn, (32, 1, 1))[0x60]
    assert (acc.wavefronts, acc.ideal) == (1, 1)          # 24 lanes, consecutive words


def test_an_address_from_memory_is_unknown():
    fn = _fn(["S2R R0, SR_TID.X",
              "LDG.E R1, desc[UR4][R2.64]",
              "LDS R3, [R1]"])
    assert shared_accesses(fn, (32, 1, 1))[0x20] is None


def test_a_loop_counter_is_uniform_not_its_first_value():
    """lane k at (k + 1, d - k) of a 33-word-wide tile: 32-way whatever d, and the guard on d is
    unknown, so every lane counts."""
    fn = _fn(["S2R R2, SR_TID.X",
              "IMAD.MOV.U32 R7, RZ, RZ, RZ",             # d = 0 before the loop
              "IMAD.IADD R4, R7, 0x1, -R2",              # loop header: d - k
              "ISETP.GT.U32.AND P0, PT, R4, 0x1f, PT",
              "IMAD R12, R2, 0x84, RZ",
              "IMAD R12, R4, 0x4, R12",
              "@!P0 LDS R8, [R12]",
              "VIADD R7, R7, 0x1"])
    headers = {0x20: frozenset({"R4", "R7", "R8", "R12", "P0"})}
    acc = shared_accesses(fn, (32, 1, 1), headers)[0x60]
    assert (acc.wavefronts, acc.ideal) == (32, 1)
    # without the header reset the pass would see d = 0: only lane 0
    first = shared_accesses(fn, (32, 1, 1))[0x60]
    assert (first.wavefronts, first.ideal) == (1, 1)
