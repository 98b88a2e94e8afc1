"""Check that every chain of latency.cu compiles to the instruction it claims to time.

Run where nvcc is (no GPU needed): ``python benchmarks/latency/check_sass.py``.
It builds latency.cu with ``nvcc -cubin -arch=sm_90 -O3``, disassembles it with
gpa_lsp's own loader and, for each kernel, checks that the timed loop body holds
the expected opcodes the expected number of times and that each of them reads
the register written by the one before it (a real dependent chain).
Exit status 0 when all hold; the report lists each kernel's body.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from gpa_lsp.sass import load_program  # noqa: E402
from gpa_lsp.toolchain import compile_cubin  # noqa: E402

UNROLL = 128

#: kernel -> ({opcode: copies in the timed body}, opcodes whose copies must chain)
EXPECT: dict[str, tuple[dict[str, int], tuple[str, ...]]] = {
    "k_iadd3": ({"IADD3": UNROLL}, ("IADD3",)),
    "k_lop3": ({"LOP3.LUT": UNROLL}, ("LOP3.LUT",)),
    "k_imad": ({"IMAD": UNROLL}, ("IMAD",)),
    # IMAD.WIDE.U32 R8, R8, k, RZ then the 64-bit add of k2 (IADD3 + IMAD.X/IADD3.X): the
    # chain is IMAD.WIDE -> IADD3 (carry) -> X -> IMAD.WIDE; IMAD.WIDE is derived in run
    "k_imad_wide": ({"IMAD.WIDE.U32": UNROLL}, ()),
    "k_popc": ({"POPC": UNROLL}, ("POPC",)),
    "k_flo": ({"FLO.U32": UNROLL}, ("FLO.U32",)),
    "k_isetp": ({"ISETP.LT.U32.XOR": 2 * UNROLL, "ISETP.GT.U32.XOR": 2 * UNROLL}, ()),
    "k_fadd": ({"FADD": UNROLL}, ("FADD",)),
    "k_fmul": ({"FMUL": UNROLL}, ("FMUL",)),
    "k_ffma": ({"FFMA": UNROLL}, ("FFMA",)),
    "k_hfma2": ({"HFMA2": UNROLL // 2, "HFMA2.MMA": UNROLL // 2}, ("HFMA2", "HFMA2.MMA")),
    "k_dfma": ({"DFMA": UNROLL}, ("DFMA",)),
    "k_dadd": ({"DADD": UNROLL}, ("DADD",)),
    "k_rcp": ({"MUFU.RCP": UNROLL, "FADD.FTZ": UNROLL}, ()),
    "k_ex2": ({"MUFU.EX2": UNROLL}, ("MUFU.EX2",)),
    "k_lg2": ({"MUFU.LG2": UNROLL}, ("MUFU.LG2",)),
    "k_sin": ({"MUFU.SIN": UNROLL, "FMUL.RZ": UNROLL}, ()),
    "k_f2f": ({"F2F.F64.F32": UNROLL, "F2F.F32.F64": UNROLL}, ()),
    "k_i2f": ({"I2FP.F32.S32": UNROLL}, ("I2FP.F32.S32",)),
    "k_i2f64": ({"I2F.F64": UNROLL, "LOP3.LUT": UNROLL}, ()),
    "k_f2i": ({"F2I.TRUNC.NTZ": UNROLL}, ("F2I.TRUNC.NTZ",)),
    "k_shfl": ({"SHFL.IDX": UNROLL}, ("SHFL.IDX",)),
    "k_lds": ({"LDS": UNROLL}, ("LDS",)),
    "k_ldg": ({"LDG.E.64": UNROLL}, ("LDG.E.64",)),
    "k_ldg_cg": ({"LDG.E.64.STRONG.GPU": UNROLL}, ("LDG.E.64.STRONG.GPU",)),
    "k_ldc": ({"LDC": UNROLL - 1, "LDC.64": 1}, ("LDC", "LDC.64")),
    "k_bar": ({"BAR.SYNC.DEFER_BLOCKING": UNROLL}, ()),
    "k_sreg<1>": ({"S2UR": 1}, ()),
    "k_sreg<2>": ({"S2R": 1}, ()),
}


def timed_body(func):
    """Instructions of the innermost loop (the timed body) of a kernel."""
    inner = max(func.loops, key=lambda lp: lp.depth) if func.loops else None
    if inner is None:
        return []
    return [i for i in func.instructions
            if any(b.start <= i.offset < b.end for b in func.blocks if b.start in inner.blocks)]


def _short(func) -> str:
    """``k_sreg<1>`` for ``void k_sreg<1>(unsigned int*, ...)``."""
    name = func.demangled or func.name
    name = name.split("(", 1)[0]
    return name.split()[-1]


def check(cubin: Path) -> list[str]:
    prog = load_program(cubin)
    problems: list[str] = []
    for fname, (counts, chained) in EXPECT.items():
        func = next((f for f in prog.functions if _short(f) == fname), None)
        if func is None:
            problems.append(f"{fname}: kernel not found")
            continue
        body = timed_body(func)
        seen = Counter(i.opcode for i in body)
        print(f"{fname}: " + ", ".join(f"{op} x{n}" for op, n in seen.most_common(5)))
        for op, n in counts.items():
            if seen[op] != n:
                problems.append(f"{fname}: {op} x{seen[op]} in the timed body, expected {n}")
        chain = [i for i in body if i.opcode in chained]
        for prev, cur in zip(chain, chain[1:]):
            if not (prev.dsts & cur.srcs):
                problems.append(f"{fname}: {cur.text!r} at {cur.offset:#x} does not read {prev.text!r}")
                break
    return problems


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "latency.sm_90.cubin"
        compile_cubin(HERE / "latency.cu", cubin, arch="sm_90", flags=("-O3",))
        problems = check(cubin)
    for p in problems:
        print("PROBLEM:", p)
    print("all chains as intended" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
