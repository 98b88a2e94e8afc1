"""What else vanishes when a change deletes instructions.

Some fixes delete instructions: a local array that becomes registers deletes its
``LDL``/``STL`` (Local Array), more registers delete the spills (Register
Reuse), shuffles delete a shared-memory tree (Warp Balance). Their optimizers
claim the samples at those instructions and the stalls blamed on them. Two more costs go with them, and Eq. 2 should count them:

* **Waits at a deleted instruction for another instruction's result.** A
  ``STL`` sampled waiting for the ``FFMA`` that computes the value it stores, an
  ``LDL`` waiting for the ``LEA`` of its address: the waiting instruction is
  gone, so is the wait. One exception, because the value does not go away: a
  wait for a *long-latency* value (a load's result) that the instruction only
  passes along (the data of a store) moves to the value's next consumer, so it
  is not claimed. A fixed-latency value's next consumer is, after the change,
  the instruction that used the value anyway (the next ``FFMA`` on the
  accumulator), typically dozens of instructions later: that short wait is
  covered there.
* **Dead code.** Instructions whose results only deleted (or dead) instructions
  used *as addresses*: the address arithmetic of a local array (the ``LEA`` of
  ``acc[shift]``, the ``shift++``). They go with the accesses, with every sample
  they had. A value a deleted store wrote stays live (it moves to a register), so
  the instructions computing it stay.

icp_local_array (Local Array): 3.54x -> 3.82x, achieved 4.31x; in the improved
variant's recording the execution-dependency stalls vanished by 0.126 of the
kernel's time: claimed 0.114 now, 0.095 before. Restrict Pointer's reloads do not
use it: a reload's address is the first load's, so nothing becomes dead (0 samples
on restrict_fir).

Uses of every instruction are needed (an unsampled user keeps a def alive), so
the reaching definitions of the whole function are computed once per function,
only when a deleting optimizer matches.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..sass import defuse
from .blame import BlameEdge, reaching_defs
from .context import kernel_fact
from ..sass.opcodes import KEPT_CONTROL, SYNC
from ..sass.operands import address_registers as operand_address_registers

# a wait at a barrier, or for an instruction fetch, is sampled at whatever instruction comes next:
# it moves there when that one is deleted
_STAYS = ("synchronization", "instruction_fetch")
_DEPENDENCIES = ("memory_dependency", "execution_dependency")
_KEEP = SYNC | KEPT_CONTROL


def address_registers(ins) -> frozenset[str]:
    """Registers an instruction reads inside any bracketed operand (``[R4.64+0x10]``: R4, R5)."""
    out: frozenset[str] = frozenset()
    for op in ins.operands:
        if isinstance(op, str) and "[" in op:
            out |= operand_address_registers(op)
    return out


def _removable(ins) -> bool:
    """Could the instruction go away when nobody uses its results (no memory, control or side effect)?"""
    return bool(ins.dsts) and ins.memory is None and ins.branch_target is None and ins.base_opcode not in _KEEP


@kernel_fact(key=lambda fb: fb.function.name)
def _reach(ctx, fb) -> dict:
    """Index -> reaching defs of every instruction of ``fb``'s function (a fact of the kernel)."""
    return reaching_defs(fb.function, fb.flow)


def _carried(dep) -> tuple[str, ...]:
    return tuple(r for r in dep.resources if r[0] in "RU" and not r.startswith("UP"))


def dead_code(ctx, deleted: frozenset[int]) -> frozenset[int]:
    """Offsets of instructions (not in ``deleted``) whose results only ``deleted`` or dead instructions
    use, as addresses."""
    out: set[int] = set()
    for fb in ctx.blames:
        ins = fb.function.instructions
        gone = {k for k, i in enumerate(ins) if i.offset in deleted}
        if not gone:
            continue
        users: dict[int, set[int]] = defaultdict(set)
        for u, deps in _reach(ctx, fb).items():
            addr = address_registers(ins[u]) if u in gone else None
            for d in deps:
                regs = _carried(d)
                if not regs:
                    continue
                # a deleted store's data lives on in a register: that use keeps the def alive (-1)
                users[d.def_].add(u if addr is None or set(regs) <= addr else -1)
        dead: set[int] = set()
        changed = True
        while changed:   # backwards: a def usually precedes its uses, so few passes
            changed = False
            for k in range(len(ins) - 1, -1, -1):
                i = ins[k]
                if k in gone or k in dead or not _removable(i):
                    continue
                us = users.get(k)
                if us and all(u in gone or u in dead for u in us):
                    dead.add(k)
                    changed = True
        out.update(ins[k].offset for k in dead)
    return frozenset(out)


def vanishing_edges(ctx, deleted: frozenset[int], claimed: Iterable[BlameEdge]) -> list[BlameEdge]:
    """Edges not in ``claimed`` whose samples vanish with ``deleted`` (see the module doc): every
    sample at dead code, and the dependency waits at deleted instructions. The deleted
    instructions' own samples (issue, queue throttle) are the calling optimizer's claim. Barrier
    and fetch waits stay: they are sampled at whatever instruction comes next."""
    have = {(e.def_, e.use, e.reason) for e in claimed}
    dead = dead_code(ctx, deleted)
    at_deleted: dict[int, list[BlameEdge]] = defaultdict(list)
    out: list[BlameEdge] = []
    for e in ctx.edges:
        if (e.def_, e.use, e.reason) in have or e.reason in _STAYS:
            continue
        if e.use in dead:
            out.append(e)
        elif e.use in deleted and e.def_ != e.use and e.reason in _DEPENDENCIES:
            at_deleted[e.use].append(e)
    for use, edges in at_deleted.items():
        site = ctx.site(use)
        if site is None:
            continue
        fb = next(b for b in ctx.blames if b.function is site.function)
        deps = {d.def_: d for d in _reach(ctx, fb).get(site.index, ())}
        addr = address_registers(site.instruction)
        for e in edges:
            d_site = ctx.site(e.def_)
            dep = deps.get(d_site.index) if d_site is not None and d_site.function is site.function else None
            via_address = dep is not None and bool(_carried(dep)) and set(_carried(dep)) <= addr
            fixed = d_site is not None and defuse.latency(d_site.instruction, ctx.sm)[2]
            if via_address or fixed:
                out.append(e)
    return out
