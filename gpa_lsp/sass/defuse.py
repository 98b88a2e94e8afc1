"""What an instruction defines and uses, scoreboards included, and what kind of def it is.

The six scoreboards are virtual registers ``B0``..``B5``: setting a write or
read barrier defines ``Bi``, a wait-mask bit uses it. That is how a stall on
a branch waiting on B0 reaches the LDG that set B0 with no register between.
"""

from __future__ import annotations

from bisect import bisect_left

from gpa_lsp.sass.arch import latency as arch_latency
from gpa_lsp.sass.model import Instruction
from gpa_lsp.sass.opcodes import BIT_COUNTS, CONVERSIONS, FP64, MUFU, SCHEDULING_CONTROL, SPECIAL, SYNC

ZERO_REGISTERS = frozenset({"RZ", "URZ", "PT", "UPT", "SRZ"})


class DefIndex:
    """Where each register of a function is written (instruction indices, ascending): the nearest def
    before an instruction by bisection, instead of a backward scan per use (a walk of a use-def chain
    over an unrolled kernel of 10^4 instructions asks it 10^4-10^5 times)."""

    def __init__(self, instructions) -> None:
        self.at: dict[str, list[int]] = {}
        for k, ins in enumerate(instructions):
            for r in ins.dsts:
                self.at.setdefault(r, []).append(k)

    def before(self, index: int, reg: str) -> int | None:
        """The index of the nearest instruction before ``index`` (layout order) that writes ``reg``."""
        at = self.at.get(reg)
        if not at:
            return None
        i = bisect_left(at, index)
        return at[i - 1] if i > 0 else None

    def written_in(self, reg: str, indices) -> bool:
        """Whether an instruction among ``indices`` (a set) writes ``reg``."""
        return any(k in indices for k in self.at.get(reg, ()))



def barrier_name(i: int) -> str:
    return f"B{i}"


def guard(ins: Instruction) -> tuple[str, bool] | None:
    return (ins.predicate, ins.predicate_negated) if ins.predicate else None


def register_uses(ins: Instruction) -> frozenset[str]:
    return frozenset(r for r in ins.srcs if r not in ZERO_REGISTERS)


def register_defs(ins: Instruction) -> frozenset[str]:
    return frozenset(r for r in ins.dsts if r not in ZERO_REGISTERS)


def barrier_uses(ins: Instruction) -> tuple[str, ...]:
    c = ins.control
    if c is None or not c.wait_mask:
        return ()
    return tuple(barrier_name(i) for i in range(6) if c.wait_mask >> i & 1)


def barrier_defs(ins: Instruction) -> tuple[tuple[str, bool], ...]:
    """(B name, is_read_barrier) for each scoreboard this instruction sets."""
    c = ins.control
    if c is None:
        return ()
    out = []
    if c.write_barrier is not None and 0 <= c.write_barrier < 6:
        out.append((barrier_name(c.write_barrier), False))
    if c.read_barrier is not None and 0 <= c.read_barrier < 6 and c.read_barrier != c.write_barrier:
        out.append((barrier_name(c.read_barrier), True))
    return tuple(out)


def memory_space(ins: Instruction) -> str | None:
    """The memory space an instruction reads from (None when it is no load)."""
    if ins.memory is not None:
        return ins.memory.space
    base = ins.base_opcode
    if base in ("LDG", "ATOMG", "REDG", "LDGSTS"):
        return "global"
    if base in ("LDL", "STL"):
        return "local"
    if base in ("LDS", "LDSM", "ATOMS", "STS"):
        return "shared"
    if base in ("LDC", "ULDC"):
        return "constant"
    if base in ("TEX", "TLD", "TLD4", "TXQ", "SULD"):
        return "texture"
    if base in ("LD", "ATOM", "RED"):
        return "generic"
    return None


def is_variable_latency(ins: Instruction) -> bool:
    """Variable-latency results are tracked by a scoreboard (the def sets a write barrier)."""
    c = ins.control
    if c is not None:
        return c.write_barrier is not None
    return memory_space(ins) is not None or ins.base_opcode in MUFU | SPECIAL | CONVERSIONS | FP64


def def_class(ins: Instruction, via_read_barrier: bool = False) -> str:
    """GPA's classification of a blamed def (section 4, Figure 5)."""
    if via_read_barrier:
        return "write_after_read"
    base = ins.base_opcode
    if base in SYNC:
        return "synchronization"
    space = memory_space(ins)
    if space in ("global", "generic", "distributed"):
        return "global_memory"
    if space == "local":
        return "local_memory"
    if space == "texture":
        return "texture_memory"
    if space == "constant":
        return "constant_memory"
    if space == "shared":
        return "shared_memory"
    if base in SPECIAL or base in SCHEDULING_CONTROL:
        return "scheduling"
    return "arithmetic"


# Volta/Ampere bounds from GPA (cycles, lower, upper). Used only when gpa_lsp.sass.arch cannot
# classify an instruction; the keys are latency classes.
_FALLBACK = {
    "integer": (4, 4), "imad": (5, 5), "popc": (10, 10), "predicate": (5, 5), "conversion": (14, 14),
    "mufu": (14, 14), "fp16": (6, 6), "fp32": (4, 4), "fp64": (8, 8), "shared": (19, 80), "memory": (28, 1024),
}


def _fallback_latency(ins: Instruction) -> tuple[int, int, bool]:
    base = ins.base_opcode
    space = memory_space(ins)
    if space == "shared":
        lo, hi = _FALLBACK["shared"]
        return lo, hi, False
    if space is not None:
        lo, hi = _FALLBACK["memory"]
        return lo, hi, False
    if base in CONVERSIONS:
        cls = "conversion"
    elif base in MUFU:
        cls = "mufu"
    elif base in FP64:
        cls = "fp64"
    elif base in BIT_COUNTS:
        cls = "popc"
    elif base.startswith("IMAD") or base == "IMUL":
        cls = "imad"
    elif base.startswith("H"):
        cls = "fp16"
    elif base.startswith("F"):
        cls = "fp32"
    elif base in ("PLOP3", "PSETP", "ISETP", "FSETP"):
        cls = "predicate"
    elif base in SPECIAL:
        return 20, 200, False
    else:
        cls = "integer"
    lo, hi = _FALLBACK[cls]
    return lo, hi, True


def latency(ins: Instruction, sm: int = 90) -> tuple[int, int, bool]:
    """(lower, upper, fixed) latency of the instruction's result, from gpa_lsp.sass.arch."""
    try:
        lo, hi, fixed = arch_latency(ins, sm)
    except Exception:  # an arch table that cannot classify this opcode
        return _fallback_latency(ins)
    return int(lo), int(hi), bool(fixed)
