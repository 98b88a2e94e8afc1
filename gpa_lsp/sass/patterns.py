"""SASS patterns of one function: facts read from its instructions that analyses share.

Each is a pure function of a :class:`~gpa_lsp.sass.model.Function`, computed once and kept on the
Function (``function_pattern``): the Program holding it is cached by content, so a pattern is
found once per cubin, whichever kernel, optimizer or analysis asks. What a pattern needs besides
the instructions (samples, a launch) belongs to the analysis (``analysis.context.kernel_fact``).

* barriers: the nearest ``BAR`` before each instruction (``last_barriers``); barriers whose waits
  are a global load's latency (``latency_barriers``);
* round trips through global memory: loads of an address the function stored before
  (``stored_back``), after a barrier (``round_trips``);
* aliasing reloads (``reloads``): an ``LDG`` of an address already loaded, with a store between;
* spills (``is_spill``): nvdisasm (CUDA 12+) annotates them with ``(*"SpillRefill"*)``. When a
  function has no annotation at all (older tools), a load from the stack frame at a constant
  offset (``LDL [R1+0x10]``) is taken as a refill, and a store as a spill only when such a refill
  reads its slot: a local array filled at constant offsets and read with a computed index
  (``STL [R1]`` ... ``LDL [R5]``) is not a spill.
"""

from __future__ import annotations

import re
from typing import Callable, TypeVar

from .model import Function
from .opcodes import (GLOBAL_LOADS, LOCAL_LOADS, LOCAL_MEMORY, PLAIN_STORES, REGION_ENDS, WAIT_BARRIERS)
from .operands import address_registers, memory_operand

T = TypeVar("T")


def function_pattern(compute: Callable[[Function], T]) -> Callable[[Function], T]:
    """``compute(function)``, kept on the Function after the first call.

    Why on the object: a Function is immutable, and its patterns are as much its own as its
    instructions; kept there they live exactly as long as the Program (no module-level cache)."""
    def get(function: Function) -> T:
        cache = function.__dict__.get("_patterns")
        if cache is None:
            cache = function.__dict__["_patterns"] = {}    # a frozen dataclass: its __dict__ directly
        try:
            return cache[get]
        except KeyError:
            got = cache[get] = compute(function)
            return got
    get.__name__, get.__qualname__, get.__doc__ = compute.__name__, compute.__qualname__, compute.__doc__
    get.__wrapped__ = compute
    return get


# --- barriers and round trips ----------------------------------------------------------------
@function_pattern
def last_barriers(function) -> tuple[int, ...]:
    """Per instruction index, the offset of the nearest barrier at or before it (-1: none).

    One pass per function: Warp Balance asks for every synchronization edge, and a backwards scan
    per edge was quadratic on large unrolled kernels.
    """
    out, last = [], -1
    for i in function.instructions:
        if i.base_opcode in WAIT_BARRIERS:
            last = i.offset
        out.append(last)
    return tuple(out)


@function_pattern
def stored_back(function) -> frozenset[int]:
    """Indices of global loads that read an address the function stored before (same address
    operand, its registers not redefined in between): a round trip through global memory."""
    ins = function.instructions
    stored: dict[str, set[str]] = {}     # address text -> its registers
    out: set[int] = set()
    for k, i in enumerate(ins):
        if stored and i.dsts:
            stored = {a: regs for a, regs in stored.items() if not (regs & i.dsts)}
        base = i.base_opcode
        if base in ("STG", "ST"):
            addr = memory_operand(i.operands)
            if addr is not None:
                stored[addr] = set(address_registers(addr))
        elif base in GLOBAL_LOADS and stored:
            addr = memory_operand(i.operands)
            if addr is not None and addr in stored:
                out.add(k)
    return frozenset(out)


@function_pattern
def round_trips(function) -> frozenset[int]:
    """Offsets of the global loads that read back what the function stored (``stored_back``)
    after a barrier: values passed between the block's threads through global memory."""
    ins = function.instructions
    bars = [k for k, i in enumerate(ins) if i.base_opcode in WAIT_BARRIERS]
    if not bars:
        return frozenset()      # none after a barrier (and no need to find the round trips)
    return frozenset(ins[k].offset for k in stored_back(function) if k > bars[0])


@function_pattern
def latency_barriers(function) -> frozenset[int]:
    """Offsets of barriers whose waits are a global load's latency (Warp Balance's docstring): the code
    since the previous barrier stores a value it loaded from global memory, not loaded back from
    an address the function stored itself."""
    ins = function.instructions
    round_trip = None       # stored_back, found at the first barrier (a function without one needs none)
    out: set[int] = set()
    start = 0
    for b, bar in enumerate(ins):
        if bar.base_opcode not in WAIT_BARRIERS:
            continue
        if round_trip is None:
            round_trip = stored_back(function)
        loaded: dict[str, bool] = {}     # register -> defined by a global load (True: a round trip)
        publishes = False
        for k in range(start, b):
            i = ins[k]
            if i.base_opcode in PLAIN_STORES and i.memory is not None and not i.memory.load:
                addr = address_registers(memory_operand(i.operands))
                data = [r for r in i.srcs if r not in addr]
                if any(loaded.get(r) is False for r in data):
                    publishes = True
            for r in i.dsts:
                loaded.pop(r, None)
            if i.base_opcode in GLOBAL_LOADS:
                for r in i.dsts:
                    loaded[r] = k in round_trip
        if publishes:
            out.add(bar.offset)
        start = b + 1
    return frozenset(out)


# --- aliasing reloads ------------------------------------------------------------------------
_ADDRESS = re.compile(r"\[[^\[\]]*\]\s*$")
_REG = re.compile(r"\b(U?R\d+)\b")


@function_pattern
def reloads(function) -> frozenset[int]:
    """Offsets of global loads that re-read an address already loaded before an intervening store."""
    out: set[int] = set()
    for blk_start, blk_end in straight_runs(function):
        version: dict[str, int] = {}
        seen: dict[tuple, bool] = {}     # address key -> a store happened since it was loaded
        for ins in function.instructions[blk_start:blk_end]:
            m = ins.memory
            if m is not None and m.load and not m.store and m.space in ("global", "generic"):
                found = _ADDRESS.search(memory_operand(ins.operands) or "")
                if found is not None:
                    text = found.group(0)
                    regs = tuple((r, version.get(r, 0)) for r in _REG.findall(text))
                    key = (text.replace(" ", ""), regs, ins.opcode)
                    if seen.get(key):
                        out.add(ins.offset)
                    seen[key] = False
            elif m is not None and m.global_write:
                for k in seen:
                    seen[k] = True
            for r in ins.dsts:
                version[r] = version.get(r, 0) + 1
    return frozenset(out)


def straight_runs(function):
    """(first, last) instruction index ranges of straight-line runs (split at branches and their targets)."""
    ins = function.instructions
    targets = {i.branch_target for i in ins if i.branch_target is not None}
    start = 0
    for k, i in enumerate(ins):
        if i.offset in targets and k > start:
            yield start, k
            start = k
        if i.base_opcode in REGION_ENDS:
            yield start, k + 1
            start = k + 1
    if start < len(ins):
        yield start, len(ins)


# --- spills ----------------------------------------------------------------------------------
_STACK = re.compile(r"\[\s*R1\s*(?:\+\s*(?:0x[0-9a-fA-F]+|\d+)\s*)?\]")
_ANNOTATION = re.compile(r"\(\*.*?\*\)")
SPILL_MARK = "SpillRefill"


def _clean(op: str) -> str:
    return _ANNOTATION.sub("", op).strip()


@function_pattern
def spills_annotated(function) -> bool:
    """nvdisasm marks this function's spills (``(*"SpillRefill"*)``, CUDA 12+)."""
    return any(SPILL_MARK in (i.text or "") or any(SPILL_MARK in o for o in i.operands)
               for i in function.instructions)


def _frame_slot(ins) -> str | None:
    for op in ins.operands:
        op = _clean(op)
        if op.startswith("[") and _STACK.fullmatch(op):
            return op.replace(" ", "")
    return None


@function_pattern
def refilled_slots(function) -> frozenset:
    """The stack-frame slots (``[R1+0x10]``) this function loads from."""
    return frozenset(s for i in function.instructions
                     if is_local(i) and _is_load(i) and (s := _frame_slot(i)) is not None)


def _is_load(ins) -> bool:
    return ins.memory.load if ins.memory is not None else ins.base_opcode in LOCAL_LOADS


def is_local(ins) -> bool:
    if ins.memory is not None:
        return ins.memory.space == "local"
    return ins.base_opcode in LOCAL_MEMORY


def is_spill(ins, function=None) -> bool:
    """A register spill or refill: annotated by nvdisasm, else a constant stack-frame offset (see the
    module docstring); ``function``: the one holding ``ins``, whose other accesses decide."""
    if not is_local(ins):
        return False
    text = (ins.text or "") + " ".join(ins.operands)
    if SPILL_MARK in text:
        return True
    if function is None:
        return _frame_slot(ins) is not None
    if spills_annotated(function):
        return False   # the tool annotates spills; this local access is not one
    slot = _frame_slot(ins)
    if slot is None:
        return False
    return _is_load(ins) or slot in refilled_slots(function)
