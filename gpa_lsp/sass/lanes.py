"""The lanes of each warp of a block, evaluated over a function's integer SASS: which lanes run a
shared-memory access and at which addresses, so that its bank conflicts are counted from the code.

Why count them from the addresses: Nsight Compute's per-instruction "L1 Conflicts Shared N-Way" is
the access's wavefronts divided by its *executed* warp instructions, rounded
(benchmarks/banks: 2 for a 32-way access that one warp of 16 runs, the other 15 predicated off), so
``(N - 1) / N`` says half the wavefronts are replays where 97% are. The ideal -- one wavefront per
warp that has an active lane and per 128 bytes it moves -- needs the lanes each warp runs, which no
collector gives per instruction; the code does.

What is evaluated: integer values per lane (32 lanes x the block's warps) through the arithmetic
that address calculations use (``S2R`` of the thread index, ``IMAD``, ``IADD3``, ``LEA``, ``SHF``,
``LOP3``, ``SEL``, ``ISETP``, ``P2R``/``R2P``...), one pass in layout order (branches are not
followed: both sides of an ``if`` are evaluated; a guard predicate selects the lanes). A value read
from memory or a register this does not know is unknown; a value that is the same in every lane but
unknown (a kernel parameter, the shared window's base, a loop counter) is kept as "uniform + the
known per-lane part", which is enough for banks: adding the same offset to every lane's word
changes no conflict. At a loop header, a register the loop redefines becomes uniform-unknown when it
is uniform on entry, else unknown (the pass sees one iteration; it must not take the first
iteration's values for all). A predicate that depends on unknown values leaves every lane active.
An access whose address is unknown in some warp is not counted (None).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import partial

from .model import Function

LANES = 32
MASK = 0xFFFFFFFF
MAX_INSTRUCTIONS = 3000          # larger functions are not evaluated (time: ~50 us per instruction and warp)
MAX_WARPS = 16                   # warps evaluated per block: all up to 16, else 16 evenly spaced from warp 0


@dataclass(frozen=True)
class Value:
    """Per-lane 32-bit values; ``uniform``: plus an unknown constant, the same in every lane."""

    lanes: tuple[int, ...]
    uniform: bool = False

    @property
    def same(self) -> bool:
        return all(v == self.lanes[0] for v in self.lanes)


UNIFORM = Value((0,) * LANES, True)
_ADD = operator.add
_mask = partial(operator.and_, MASK)
_IMM = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")


def _const(v: int) -> Value:
    return Value((v & MASK,) * LANES)


def _signed(v: int) -> int:
    v &= MASK
    return v - (1 << 32) if v & 0x80000000 else v


@dataclass(frozen=True)
class SharedAccess:
    """What the lanes of a block's warps do at one shared access: its wavefronts (the most distinct
    words a bank serves, per warp, summed) and the ideal (per warp with an active lane, its bytes
    over 128, at least 1); ``warps``: the warps evaluated (each executes the instruction), so that
    ``wavefronts / warps`` is per executed warp instruction, ncu's "N-Way"."""

    wavefronts: int
    ideal: int
    warps: int

    @property
    def replay_share(self) -> float:
        return (self.wavefronts - self.ideal) / self.wavefronts if self.wavefronts > 0 else 0.0


def _thread_index(block: tuple[int, int, int], warp: int, which: str) -> tuple[int, ...]:
    bx, by, _ = block
    out = []
    for lane in range(LANES):
        t = warp * LANES + lane
        out.append(t % bx if which == "X" else (t // bx) % by if which == "Y" else t // (bx * by))
    return tuple(out)


class _Warp:
    def __init__(self, block: tuple[int, int, int], warp: int) -> None:
        self.block, self.warp = block, warp
        self.regs: dict[str, Value | None] = {}
        self.preds: dict[str, tuple[bool, ...] | None] = {}

    # --- operands ------------------------------------------------------------------------
    def value(self, tok: str) -> Value | None:
        tok = tok.strip()
        neg = tok.startswith("-")
        inv = tok.startswith("~")
        t = tok.lstrip("-~|").split(".reuse")[0]
        if t.endswith("|"):
            return None
        if t in ("RZ", "URZ"):
            v: Value | None = _const(0)
        elif _IMM.match(t):
            v = _const(int(t, 16) if "0x" in t else int(t))
        elif t.startswith("c[") or t.startswith("SR_"):
            v = UNIFORM
        elif t.startswith("UR"):
            v = self.regs.get(t, UNIFORM)
        elif t.startswith("R") and t[1:].isdigit():
            v = self.regs.get(t)
        else:
            return None
        if v is None:
            return None
        if neg:
            v = Value(tuple((-x) & MASK for x in v.lanes), v.uniform)
        if inv:
            v = None if v.uniform else Value(tuple((~x) & MASK for x in v.lanes))
        return v

    def pred(self, tok: str) -> tuple[bool, ...] | None:
        tok = tok.strip()
        neg = tok.startswith("!")
        t = tok.lstrip("!")
        if t in ("PT", "UPT"):
            p: tuple[bool, ...] | None = (True,) * LANES
        else:
            p = self.preds.get(t, None) if t in self.preds else None
        if p is None:
            return None
        return tuple(map(operator.not_, p)) if neg else p

    def guard(self, ins) -> tuple[bool, ...] | None:
        if ins.predicate is None:
            return (True,) * LANES
        return self.pred(("!" if ins.predicate_negated else "") + ins.predicate)

    # --- writes --------------------------------------------------------------------------
    def set_reg(self, name: str, v: Value | None, guard) -> None:
        if name in ("RZ", "URZ"):
            return
        if guard is None or not all(guard):
            old = self.regs.get(name)
            if guard is None or v is None or old is None or v.uniform or old.uniform:
                v = None if (v is None or old is None or v != old) else v
            else:
                v = Value(tuple(n if g else o for n, o, g in zip(v.lanes, old.lanes, guard)))
        self.regs[name] = v

    def set_pred(self, name: str, p, guard) -> None:
        if name in ("PT", "UPT"):
            return
        if guard is None or not all(guard):
            old = self.preds.get(name)
            p = None if (p is None or old is None or guard is None) else tuple(
                n if g else o for n, o, g in zip(p, old, guard))
        self.preds[name] = p


def _binary(a: Value | None, b: Value | None, op) -> Value | None:
    if a is None or b is None:
        return None
    if op is _ADD:      # the hot case (address arithmetic): C-speed, masked once
        return Value(tuple(map(_mask, map(operator.add, a.lanes, b.lanes))), a.uniform or b.uniform)
    return Value(tuple(op(x, y) & MASK for x, y in zip(a.lanes, b.lanes)), a.uniform or b.uniform)


def _times(a: Value | None, b: Value | None) -> Value | None:
    """a x b: an unknown uniform factor is fine only against a known uniform one."""
    if a is None or b is None:
        return None
    if (a.uniform and not (b.same and not b.uniform)) or (b.uniform and not (a.same and not a.uniform)):
        return UNIFORM if a.same and b.same else None
    return Value(tuple((x * y) & MASK for x, y in zip(a.lanes, b.lanes)), a.uniform or b.uniform)


def _shift_left(a: Value | None, s: Value | None) -> Value | None:
    if a is None or s is None or s.uniform or not s.same:
        return None
    k = s.lanes[0] & 31
    return Value(tuple((x << k) & MASK for x in a.lanes), a.uniform)


def _lop3(a, b, c, lut: int) -> Value | None:
    if a is None or b is None or c is None or a.uniform or b.uniform or c.uniform:
        return UNIFORM if a is not None and b is not None and c is not None and a.same and b.same and c.same else None
    out = []
    for x, y, z in zip(a.lanes, b.lanes, c.lanes):
        r = 0
        for bit in range(32):
            i = (((x >> bit) & 1) << 2) | (((y >> bit) & 1) << 1) | ((z >> bit) & 1)
            r |= ((lut >> i) & 1) << bit
        out.append(r)
    return Value(tuple(out))


_CMP = {"EQ": lambda x, y: x == y, "NE": lambda x, y: x != y, "LT": lambda x, y: x < y,
        "LE": lambda x, y: x <= y, "GT": lambda x, y: x > y, "GE": lambda x, y: x >= y}


def _setp(ins, w: _Warp):
    mods = ins.opcode.split(".")[1:]
    cmp = next((m for m in mods if m in _CMP), None)
    combine = next((m for m in mods if m in ("AND", "OR", "XOR")), "AND")
    ops = ins.operands
    if cmp is None or len(ops) < 4 or "EX" in mods:     # .EX: the high half of a 64-bit compare
        return None
    a, b = w.value(ops[2]), w.value(ops[3])
    c = w.pred(ops[4]) if len(ops) > 4 else (True,) * LANES
    if a is None or b is None or c is None or a.uniform or b.uniform:
        return None
    conv = (lambda v: v & MASK) if "U32" in mods else _signed
    r = [_CMP[cmp](conv(x), conv(y)) for x, y in zip(a.lanes, b.lanes)]
    if combine == "AND":
        return tuple(x and y for x, y in zip(r, c))
    if combine == "OR":
        return tuple(x or y for x, y in zip(r, c))
    return tuple(x != y for x, y in zip(r, c))


def _step(ins, w: _Warp) -> None:
    """Evaluate one instruction's integer/predicate results for one warp."""
    base = ins.base_opcode
    ops = ins.operands
    g = w.guard(ins)
    if g is not None and not any(g):
        return
    dst = ops[0].split(".reuse")[0] if ops else ""
    val: Value | None = None
    handled = True
    if base in ("S2R", "CS2R") and len(ops) > 1:
        sr = ops[1]
        if sr.startswith("SR_TID."):
            val = Value(_thread_index(w.block, w.warp, sr[-1]))
        elif sr == "SR_LANEID":
            val = Value(tuple(range(LANES)))
        else:
            val = UNIFORM if "TID" not in sr else None
    elif base in ("S2UR", "ULDC", "LDC", "UMOV", "ULEA", "UIADD3", "USHF", "UIMAD", "ULOP3", "USEL"):
        val = w.value(ops[1]) if base == "UMOV" and len(ops) > 1 else UNIFORM
        if base == "UMOV" and val is not None and not val.same:
            val = None
        if base == "LDC" and len(ops) > 1 and "R" in ops[1].split("[")[-1]:
            val = None   # an indexed constant load may differ per lane
    elif base == "MOV" and len(ops) > 1:
        val = w.value(ops[1])
    elif base == "IMAD" and len(ops) >= 4:
        mods = ins.opcode.split(".")[1:]
        if "MOV" in mods:
            val = w.value(ops[3])
        elif "HI" in mods or "X" in mods:
            val = None
        else:
            val = _binary(_times(w.value(ops[1]), w.value(ops[2])), w.value(ops[3]), _ADD)
        if "WIDE" in mods:
            w.set_reg(_next_reg(dst), None, g)
    elif base in ("IADD3", "IADD") and len(ops) >= 3:
        if ".X" in ins.opcode:
            val = None
        else:
            srcs = [o for o in ops[1:] if not o.lstrip("!").startswith(("P", "UP"))]
            val = _const(0)
            for o in srcs[:3]:
                val = _binary(val, w.value(o), _ADD)
            for o in ops[1:]:
                if o.startswith("P") and o != "PT":
                    w.set_pred(o, None, g)
    elif base == "VIADD" and len(ops) >= 3:
        val = _binary(w.value(ops[1]), w.value(ops[2]), _ADD)
    elif base == "LEA" and len(ops) >= 4:
        if ".HI" in ins.opcode or ".X" in ins.opcode:
            val = None
        else:
            rest = [o for o in ops[1:] if not (o.startswith("P") and o[1:].isdigit())]
            if len(rest) >= 3:
                val = _binary(_shift_left(w.value(rest[0]), w.value(rest[2])), w.value(rest[1]), _ADD)
            for o in ops[1:]:
                if o.startswith("P") and o[1:].isdigit():
                    w.set_pred(o, None, g)
    elif base == "SHF" and len(ops) >= 4:
        mods = ins.opcode.split(".")[1:]
        if "L" in mods and "U32" in mods:
            val = _shift_left(w.value(ops[1]), w.value(ops[2]))
        elif "R" in mods and "HI" in mods and ("U32" in mods or "S32" in mods):
            a, s = w.value(ops[3]), w.value(ops[2])
            if a is None or s is None or a.uniform or s.uniform or not s.same:
                val = UNIFORM if a is not None and a.same and s is not None and s.same else None
            else:
                k = s.lanes[0] & 31
                val = Value(tuple(((x >> k) if "U32" in mods else (_signed(x) >> k)) & MASK for x in a.lanes))
        else:
            val = None
    elif base == "LOP3" and len(ops) >= 5 and not ops[0].startswith("P"):
        try:
            lut = int(ops[4], 16)
        except ValueError:
            lut = -1
        val = _lop3(w.value(ops[1]), w.value(ops[2]), w.value(ops[3]), lut) if lut >= 0 else None
    elif base == "SEL" and len(ops) >= 4:
        a, b, p = w.value(ops[1]), w.value(ops[2]), w.pred(ops[3])
        if a is None or b is None or p is None or a.uniform or b.uniform:
            val = a if (a is not None and a == b) else None
        else:
            val = Value(tuple(x if q else y for x, y, q in zip(a.lanes, b.lanes, p)))
    elif base == "ISETP":
        w.set_pred(dst, _setp(ins, w), g)
        if len(ops) > 1:
            w.set_pred(ops[1], None, g)
        return
    elif base == "P2R" and len(ops) >= 4:
        rs, mask = w.value(ops[2]), w.value(ops[3])
        if rs is None or mask is None or rs.uniform or mask.uniform or not mask.same:
            val = None
        else:
            m = mask.lanes[0]
            bits = [w.pred(f"P{i}") if (m >> i) & 1 else (False,) * LANES for i in range(7)]
            if any(b is None for b in bits):
                val = None
            else:
                val = Value(tuple((x & ~m | sum(int(bits[i][ln]) << i for i in range(7))) & MASK
                                  for ln, x in enumerate(rs.lanes)))
    elif base == "R2P" and len(ops) >= 3:
        rs, mask = w.value(ops[1]), w.value(ops[2])
        if rs is None or mask is None or rs.uniform or not mask.same or mask.uniform:
            for i in range(7):
                w.set_pred(f"P{i}", None, g)
        else:
            m = mask.lanes[0]
            for i in range(7):
                if (m >> i) & 1:
                    w.set_pred(f"P{i}", tuple(bool((x >> i) & 1) for x in rs.lanes), g)
        return
    else:
        handled = False
    if handled and dst:
        if dst.startswith(("P", "UP")) and not dst.startswith("PR"):
            w.set_pred(dst, None, g)
        else:
            w.set_reg(dst, val, g)
        return
    # anything else: what it writes is unknown
    for d in ins.dsts:
        if d.startswith(("P", "UP")):
            w.set_pred(d, None, g)
        elif d.startswith("UR"):
            w.set_reg(d, UNIFORM, g)
        else:
            w.set_reg(d, None, g)


def _next_reg(name: str) -> str:
    if name.startswith("R") and name[1:].isdigit():
        return f"R{int(name[1:]) + 1}"
    return "RZ"


_ADDR = re.compile(r"\[([^\]]*)\]")


_TERMS: dict[str, tuple[str, ...] | None] = {}


def _terms(op: str) -> tuple[str, ...] | None:
    """The summands of a memory operand's address (``[R12+UR4+0x10]``), parsed once per text."""
    got = _TERMS.get(op, ())
    if got != ():
        return got
    m = _ADDR.search(op)
    out: tuple[str, ...] | None = None
    if m is not None:
        terms = [t.strip() for t in m.group(1).split("+") if t.strip()]
        if not any(t.endswith((".X4", ".X8", ".X16")) for t in terms):
            out = tuple(t.replace(".64", "").replace(".U32", "") for t in terms)
    _TERMS[op] = out
    return out


def _address(ins, w: _Warp) -> Value | None:
    op = next((o for o in ins.operands if "[" in o), None)
    terms = _terms(op) if op is not None else None
    if terms is None:
        return None
    total: Value | None = _const(0)
    for term in terms:
        total = _binary(total, w.value(term), _ADD)
        if total is None:
            return None
    return total


def _wavefronts(addresses: list[int], bytes_per_lane: int) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp's access: the most distinct 4-byte words one of the 32 banks
    serves, and the bytes moved over 128 (at least 1)."""
    if not addresses:
        return 0, 0
    words: set[int] = set()
    for a in addresses:
        for k in range(max(1, bytes_per_lane // 4)):
            words.add((a >> 2) + k)
    per_bank: dict[int, int] = {}
    for wd in words:
        per_bank[wd % 32] = per_bank.get(wd % 32, 0) + 1
    ideal = max(1, -(-len(words) * 4 // 128))
    return max(ideal, max(per_bank.values())), ideal


def shared_accesses(function: Function, block: tuple[int, int, int],
                    loop_headers: dict[int, frozenset[str]] | None = None) -> dict[int, SharedAccess | None]:
    """Offset -> the wavefronts of each shared load/store for one block of ``block`` threads (None
    where an address is unknown). ``loop_headers``: header offset -> the registers its loop
    redefines (reset to uniform-unknown or unknown there)."""
    ins = function.instructions
    shared = [i for i in ins if i.memory is not None and i.memory.space == "shared"]
    if not shared or len(ins) > MAX_INSTRUCTIONS or len(block) != 3 or min(block) <= 0:
        return {}
    threads = block[0] * block[1] * block[2]
    warps = max(1, -(-threads // LANES))
    loop_headers = loop_headers or {}
    totals: dict[int, list[int] | None] = {i.offset: [0, 0] for i in shared}
    picked = sorted({k * warps // MAX_WARPS for k in range(MAX_WARPS)}) if warps > MAX_WARPS else range(warps)
    last = max(k for k, i in enumerate(ins) if i.memory is not None and i.memory.space == "shared")
    work = _slice(ins[:last + 1])
    for wi in picked:
        w = _Warp(block, wi)
        for i in work:
            regs = loop_headers.get(i.offset)
            if regs:
                for r in regs:
                    v = w.regs.get(r)
                    w.regs[r] = UNIFORM if v is not None and v.same else None
                for p in [r for r in regs if r.startswith("P")]:
                    w.preds[p] = None
            if i.memory is not None and i.memory.space == "shared" and totals.get(i.offset) is not None:
                g = w.guard(i)
                addr = _address(i, w)
                if g is None:
                    g = (True,) * LANES
                live = [ln for ln in range(LANES) if g[ln] and wi * LANES + ln < threads]
                if live and addr is None:
                    totals[i.offset] = None
                elif live:
                    got = _wavefronts([addr.lanes[ln] for ln in live], max(4, i.memory.width // 8))
                    t = totals[i.offset]
                    t[0] += got[0]
                    t[1] += got[1]
            _step(i, w)
    n = len(picked)
    return {o: None if t is None else SharedAccess(t[0], t[1], n) for o, t in totals.items()}


def _slice(ins) -> list:
    """The instructions the shared accesses' addresses and guards depend on (registers and
    predicates, flow-insensitive: a superset), and the accesses themselves, in order. Evaluating
    only these keeps the pass to the address arithmetic of a kernel whose other work is maths."""
    shared = [i for i in ins if i.memory is not None and i.memory.space == "shared"]
    needed: set[str] = set()
    for i in shared:
        needed |= set(i.srcs) - set(i.dsts) if i.memory.store else set(i.srcs)
    # a store's data register is a source too; it does not matter for banks but is harmless
    defs: dict[str, list] = {}
    for i in ins:
        for d in i.dsts:
            defs.setdefault(d, []).append(i)
    seen: set[int] = set()
    todo = list(needed)
    while todo:
        r = todo.pop()
        for i in defs.get(r, ()):
            if i.offset in seen:
                continue
            seen.add(i.offset)
            for src in i.srcs:
                if src not in needed:
                    needed.add(src)
                    todo.append(src)
            if i.base_opcode == "P2R" or i.base_opcode == "R2P":     # PR: all predicates
                for k in range(7):
                    if f"P{k}" not in needed:
                        needed.add(f"P{k}")
                        todo.append(f"P{k}")
    keep = seen | {i.offset for i in shared}
    return [i for i in ins if i.offset in keep]
