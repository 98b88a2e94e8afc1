"""Operands of one SASS instruction: registers defined and used, memory space and width, constants.

nvdisasm prints the destination(s) first. The rules here (checked on nvcc 13
output for sm_80/sm_90/sm_100):

* no destination: stores, reductions (RED/REDG), branches, calls, barriers,
  LDGSTS and the other "side effect only" opcodes in ``_NO_DST``;
* otherwise operand 0 is a destination, and so is operand 1 when it is an
  unnegated predicate (``ISETP P0, PT, ...``, carry-out ``IADD3 R2, P0, ...``)
  or when operand 0 is a predicate and operand 1 a register
  (``LOP3.LUT P0, RZ, ...``, ``ATOMG PT, R2, ...``, ``SHFL.BFLY PT, R3, ...``);
  IADD3 may carry out two predicates;
* register widths: ``.64`` / ``.128`` memory data, ``.64`` ALU ops, double
  precision D* ops and F64/S64/U64 conversions use pairs; ``[R2.64]``
  addresses and ``desc[UR4]`` descriptors are pairs; IMAD.WIDE writes a pair
  and reads its addend as a pair; LDSM ``.4`` writes four registers; HMMA/IMMA
  fragments use the sizes of their shape.

RZ, URZ, PT and UPT are constants and never appear in the sets. ``PR`` (all
predicates, in P2R/R2P) expands to P0..P6.
"""

from __future__ import annotations

import re

from .model import MemoryAccess
from .opcodes import FP64_OPERANDS, TYPED_CONVERSIONS

_REG_RE = re.compile(r"(?<![A-Za-z0-9_$.])(!?)(UR\d+|URZ|R\d+|RZ|UP\d+|UPT|P\d+|PT|PR)(\.64)?")
_CBANK_RE = re.compile(r"(?<![A-Za-z_])c\[(0x[0-9a-fA-F]+|UR\d+|R\d+)\]\[([^\]]*)\]")
_TARGET_RE = re.compile(r"`\(([^)]*)\)")

_NO_DST = frozenset("""
ST STG STS STL STSM RED REDG BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BAR WARPSYNC NOP DEPBAR
MEMBAR FENCE ERRBAR CCTL CCTLL CCTLT LDGSTS LDGDEPBAR ARRIVES KILL BPT YIELD NANOSLEEP UTMALDG UTMASTG
UBLKCP UBLKRED UTMAPF UTMACCTL UTMAREDG UBLKPF WARPGROUP BREAK PREEXIT SUST SURED ACQBULK USETMAXREG
STAS REDAS UCGABAR_ARV UCGABAR_WAIT CGAERRBAR""".split())

# memory opcodes -> (space, load, store, atomic)
_MEMORY = {
    "LDG": ("global", True, False, False), "STG": ("global", False, True, False),
    "ATOMG": ("global", True, True, True), "REDG": ("global", False, True, True),
    "LD": ("generic", True, False, False), "ST": ("generic", False, True, False),
    "ATOM": ("generic", True, True, True), "RED": ("generic", False, True, True),
    "LDL": ("local", True, False, False), "STL": ("local", False, True, False),
    "LDS": ("shared", True, False, False), "STS": ("shared", False, True, False),
    "LDSM": ("shared", True, False, False), "STSM": ("shared", False, True, False),
    "ATOMS": ("shared", True, True, True), "STAS": ("distributed", False, True, False),
    "REDAS": ("distributed", False, True, True),
    "LDC": ("constant", True, False, False), "ULDC": ("constant", True, False, False),
    "LDCU": ("constant", True, False, False),
    "TEX": ("texture", True, False, False), "TLD": ("texture", True, False, False),
    "TLD4": ("texture", True, False, False), "TMML": ("texture", True, False, False),
    "TXD": ("texture", True, False, False), "TXQ": ("texture", True, False, False),
    "SULD": ("texture", True, False, False), "SUST": ("texture", False, True, False),
    "SUATOM": ("texture", True, True, True), "SURED": ("texture", False, True, True),
    # LDGSTS copies global -> shared asynchronously; it is tracked as the global load it starts
    "LDGSTS": ("global", True, False, False),
    "UTMALDG": ("global", True, False, False), "UTMASTG": ("global", False, True, False),
    "UBLKCP": ("global", True, False, False),
}

_WIDTH_MODS = {"64": 64, "128": 128, "U8": 8, "S8": 8, "U16": 16, "S16": 16, "32": 32}
_TYPE_WIDTH = {"F64": 2, "S64": 2, "U64": 2}


def memory_access(base: str, mods: list[str]) -> MemoryAccess | None:
    kind = _MEMORY.get(base)
    if kind is None:
        return None
    width = 32
    for m in mods:
        w = _WIDTH_MODS.get(m)
        if w is not None:
            width = w
    if base == "LDSM" or base == "STSM":
        n = 1
        for m in mods:
            if m in ("2", "4", "x2", "x4"):
                n = int(m[-1])
        width = 32 * n
    space, load, store, atomic = kind
    return MemoryAccess(space=space, width=width, load=load, store=store, atomic=atomic)


def _mma_widths(base: str, mods: list[str]) -> tuple[int, int, int, int]:
    """Registers of (D, A, B, C) for a warp-level MMA (approximate per shape)."""
    shape = next((m for m in mods if m[:1].isdigit()), "")
    f32acc = "F32" in mods or base in ("IMMA",)
    if shape in ("16816", "16832", "16864"):
        return (4 if f32acc else 2, 4, 2, 4 if f32acc else 2)
    if shape in ("1688", "1684", "8816", "8832"):
        return (4 if f32acc else 2, 2, 1, 4 if f32acc else 2)
    return (4, 4, 2, 4)


def _gmma_dst(mods: list[str]) -> int:
    shape = next((m for m in mods if "x" in m and m[:1].isdigit()), "")
    try:
        n = int(shape.split("x")[1])
    except (IndexError, ValueError):
        return 1
    return max(1, n // 2 if "F32" in mods or "S32" in mods else n // 4)


def _is_pred(tok: str) -> bool:
    t = tok.lstrip("!")
    return t[:1] == "P" or t[:2] == "UP"


def _is_reg(tok: str) -> bool:
    t = tok.lstrip("-|~")
    return t[:1] == "R" and (t[1:2].isdigit() or t[:2] == "RZ") or t[:2] == "UR"


def _expand(name: str, n: int, out: set[str]) -> None:
    if name in ("RZ", "URZ", "PT", "UPT"):
        return
    if name == "PR":
        out.update(f"P{i}" for i in range(7))
        return
    if n == 1:
        out.add(name)
        return
    prefix = "UR" if name[0] == "U" else "R"
    k = int(name[len(prefix):])
    out.update(f"{prefix}{k + i}" for i in range(n))


def split_operands(text: str) -> tuple[str, ...]:
    """Split nvdisasm's operand list on top-level commas (targets like `(.L_a,.L_b) contain commas)."""
    if not text:
        return ()
    if "`" not in text and "{" not in text:
        return tuple(p.strip() for p in text.split(","))
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return tuple(parts)


def targets(operands: tuple[str, ...]) -> list[str]:
    """Label / symbol names in backquoted ``(...)`` operands, in order."""
    out: list[str] = []
    for op in operands:
        if "`" in op:
            for m in _TARGET_RE.finditer(op):
                out.extend(t.strip() for t in m.group(1).split(",") if t.strip())
    return out


_BRACKET_RE = re.compile(r"\[([^\]]*)\]")
_ADDRESS_REG_RE = re.compile(r"(?<![A-Za-z0-9_])(UR\d+|R\d+)(\.64)?")


def memory_operand(operands: tuple[str, ...]) -> str | None:
    """A load's or store's memory operand as written, without a cache-policy suffix:
    ``[R4+0x10]``, ``desc[UR4][R2.64+0x8]``; None when no operand has one. The first bracketed
    operand: a store names its address first, a load after its destination."""
    for op in operands:
        if isinstance(op, str) and "[" in op:
            return op.split("(*")[0].strip()
    return None


def address_registers(operand: str | None) -> frozenset[str]:
    """Registers read inside an operand's brackets (``desc[UR4][R4.64+0x10]``: UR4, R4, R5)."""
    out: set[str] = set()
    for inner in _BRACKET_RE.findall(operand or ""):
        for name, wide in _ADDRESS_REG_RE.findall(inner):
            _expand(name, 2 if wide else 1, out)
    return frozenset(out)


def constant_operands(operands: tuple[str, ...]) -> tuple[tuple[int, int | None], ...]:
    """``c[bank][offset]`` operands as (bank, offset); offset None when register-indexed, bank -1 when indexed."""
    out = []
    for op in operands:
        if "c[" not in op:
            continue
        for m in _CBANK_RE.finditer(op):
            bank_s, off_s = m.group(1), m.group(2)
            bank = int(bank_s, 16) if bank_s.startswith("0x") else -1
            try:
                off: int | None = int(off_s, 16)
            except ValueError:
                off = None
            out.append((bank, off))
    return tuple(out)


def _num_dsts(base: str, ops: tuple[str, ...]) -> int:
    if base in _NO_DST or not ops:
        return 0
    first = ops[0].lstrip("-|~!")
    if not (_is_reg(first) or _is_pred(first)):
        return 0
    if len(ops) < 2:
        return 1
    second = ops[1]
    if _is_pred(first):
        if base in ("VOTE", "VOTEU"):
            return 1
        if _is_reg(second):
            return 2
        if not second.startswith("!") and _is_pred(second):
            return 2
        return 1
    if not second.startswith("!") and _is_pred(second):
        if base in ("IADD3", "UIADD3") and len(ops) > 2 and not ops[2].startswith("!") and _is_pred(ops[2]):
            return 3
        return 2
    return 1


def analyze(opcode: str, ops: tuple[str, ...], guard: str | None
            ) -> tuple[frozenset[str], frozenset[str], MemoryAccess | None]:
    """(dsts, srcs, memory) of one instruction. ``guard`` is the guard predicate (already without PT)."""
    parts = opcode.split(".")
    base, mods = parts[0], parts[1:]
    mem = memory_access(base, mods)
    ndst = _num_dsts(base, ops)

    # registers per operand position: default 1
    dst_w = 1
    src_w = 1
    src_w_at: dict[int, int] = {}
    data_w = (mem.width // 32) if mem is not None and mem.width > 32 else 1
    if mem is not None:
        dst_w = data_w if mem.load else 1
        src_w = data_w  # store data / atomic operand
    elif base in FP64_OPERANDS:
        dst_w = 1 if base in ("DSETP",) else 2
        src_w = 2
    elif base in TYPED_CONVERSIONS:
        types = [m for m in mods if m[:1] in "FSU" and m[1:].isdigit()]
        if types:
            dst_w = _TYPE_WIDTH.get(types[0], 1)
            if len(types) > 1:
                src_w = _TYPE_WIDTH.get(types[1], 1)
    elif "WIDE" in mods:
        dst_w = 2
        src_w_at[ndst + 2] = 2
    elif "64" in mods:
        dst_w = src_w = 2
    elif base in ("HMMA", "IMMA", "BMMA", "DMMA"):
        d, a, b, c = _mma_widths(base, mods)
        dst_w = d
        src_w_at.update({ndst: a, ndst + 1: b, ndst + 2: c})
    elif base in ("HGMMA", "IGMMA", "QGMMA", "BGMMA"):
        dst_w = _gmma_dst(mods)
        src_w = dst_w

    dsts: set[str] = set()
    srcs: set[str] = set()
    if guard is not None:
        srcs.add(guard)
    for i, op in enumerate(ops):
        if "`" in op:
            op = op.split("`", 1)[0]
        is_dst = i < ndst
        in_mem = "[" in op
        for m in _REG_RE.finditer(op):
            name, pair = m.group(2), m.group(3)
            if pair or (in_mem and name.startswith("UR") and op.startswith(("desc[", "gdesc[")) and m.start() < op.find("]")):
                n = 2
            elif in_mem:
                n = 1
            elif is_dst:
                n = dst_w if name[0] in "RU" and name[:2] != "UP" else 1
            else:
                n = src_w_at.get(i, src_w) if name[0] in "RU" and name[:2] != "UP" else 1
            _expand(name, n, dsts if (is_dst and not in_mem) else srcs)
    return frozenset(dsts), frozenset(srcs), mem
