"""Loads that aliasing serializes: round trips a ``__restrict__`` would let overlap.

nvcc keeps a global load below a global store in program order when the two may alias. When that
store (or anything between the earlier load and it) waits on an earlier load's value, the later
load cannot issue before the earlier one returned: each load pays a round trip of its own.
index_select_rows' copy loop is the plain case: nvcc unrolls it by 16 and issues ``LDG, STG, LDG,
STG, ...``, every ``STG`` waiting for the ``LDG`` before it, so one warp has one load in flight
at a time. With ``const __restrict__`` the compiler hoists the 16 loads above the stores (its
restrict variant's SASS: 16 ``LDG.E.CONSTANT`` first) and the 16 round trips overlap.

What is counted, per straight-line run of instructions (split at branches and their targets, as
``patterns.reloads`` splits them; plain global loads only, ``.CONSTANT`` ones are already free):

* the *rounds now*: one, plus one for every load that some instruction since the previous load
  waited on an earlier load's value (in-order issue: the wait holds every later instruction);
* a round boundary is *aliasing's* when a global store or atomic lies between that wait and the
  load: without it the compiler was free to hoist the load already and did not, and restrict
  does not change its mind;
* the *rounds after* hoisting: the boundaries that are not aliasing's, plus one, or the depth of
  the loads' own address chain (a load whose address comes from another load's value waits for
  it either way), whichever is larger.

``aliased_rounds(function)`` maps each load offset of a run where aliasing's boundaries exist to
the run's ratio, rounds now / rounds after: the factor by which hoisting divides the waits those
loads cause. Runs without such a boundary are left out (nothing for restrict to batch there).
"""

from __future__ import annotations

from .model import Function, Instruction
from .opcodes import CTA_BARRIERS, GLOBAL_LOADS
from .operands import address_registers, memory_operand
from .patterns import function_pattern, straight_runs


def plain_global_load(ins: Instruction) -> bool:
    """A global load the compiler may not move above an aliasing store (not ``.CONSTANT``)."""
    return ins.base_opcode in GLOBAL_LOADS and ".CONSTANT" not in ins.opcode


def _any_global_load(ins: Instruction) -> bool:
    return ins.base_opcode in GLOBAL_LOADS


def _run_rounds(instructions, is_load=plain_global_load) -> tuple[list[int], int, int]:
    """(offsets of the loads ``is_load`` picks, rounds now, rounds after hoisting) of one
    straight-line run."""
    pending: set[str] = set()        # registers that loads in flight will write
    level: dict[str, int] = {}       # register -> depth of the load chain its value comes from
    loads: list[int] = []
    waited = written_after_wait = False
    aliasing = other = depth = 0
    for ins in instructions:
        if pending and (ins.srcs & pending):
            pending.clear()
            waited, written_after_wait = True, False
        if waited and ins.memory is not None and ins.memory.global_write:
            written_after_wait = True
        src_level = max((level.get(r, 0) for r in ins.srcs), default=0)
        if is_load(ins):
            addr_level = max((level.get(r, 0) for r in address_registers(memory_operand(ins.operands))),
                             default=0)
            own = addr_level + 1
            depth = max(depth, own)
            if loads and waited:
                if written_after_wait and addr_level == 0:
                    aliasing += 1
                else:
                    other += 1
            loads.append(ins.offset)
            waited = written_after_wait = False
            pending |= ins.dsts
            for r in ins.dsts:
                level[r] = own
        else:
            for r in ins.dsts:
                level[r] = src_level
    if not loads:
        return loads, 0, 0
    return loads, 1 + aliasing + other, max(1 + other, depth)


@function_pattern
def aliased_rounds(function: Function) -> dict[int, float]:
    """Load offset -> rounds now / rounds after hoisting, for runs whose loads aliasing serializes
    (see the module docstring)."""
    out: dict[int, float] = {}
    ins = function.instructions
    for start, end in straight_runs(function):
        loads, now, after = _run_rounds(ins[start:end])
        if loads and now > after:
            ratio = now / after
            for off in loads:
                out[off] = ratio
    return out


def load_rounds(function: Function) -> int:
    """The round trips of global loads (plain or ``.CONSTANT``) over the function's straight-line runs:
    per run, one plus one for every load that an instruction since the previous load waited on an
    earlier load's value (``_run_rounds``' rounds now). What a fix that lets loads go out together
    (``__restrict__``) lowers: ``gpa verify`` compares it between the original and the fix's build."""
    ins = function.instructions
    return sum(_run_rounds(ins[start:end], _any_global_load)[1] for start, end in straight_runs(function))


def loads_behind_barriers(function: Function) -> int:
    """Global loads that a block barrier precedes in their straight-line run: a plain load stays
    below ``bar.sync``, a read-only one may move above it (benchmarks/restrict ``barrier``)."""
    count = 0
    ins = function.instructions
    for start, end in straight_runs(function):
        seen_barrier = False
        for i in ins[start:end]:
            if i.base_opcode in CTA_BARRIERS:
                seen_barrier = True
            elif seen_barrier and i.base_opcode in GLOBAL_LOADS:
                count += 1
    return count
