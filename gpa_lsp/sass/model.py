"""The SASS program: plain immutable data shared by the static side and the advisor.

Offsets are byte offsets within the function's ``.text`` section, exactly as
nvdisasm prints them and as the collectors report PCs (instruction k of a
section is at 16*k). A non-inlined device function that lives inside a
kernel's section keeps *section* offsets, so ``(section, offset)`` is the
key that joins samples to instructions.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Control:
    """Decoded control code (Volta..Hopper): bits 105..127 of the instruction."""

    stall: int
    yield_: bool            # JSON key "yield"
    write_barrier: int | None  # None = no barrier (raw value 7)
    read_barrier: int | None
    wait_mask: int          # bit i set = waits on scoreboard i
    reuse: int

    def to_json(self) -> dict:
        return {"stall": self.stall, "yield": self.yield_, "write_barrier": self.write_barrier,
                "read_barrier": self.read_barrier, "wait_mask": self.wait_mask, "reuse": self.reuse}


@dataclass(frozen=True)
class SourceLoc:
    file: str   # absolute path at build time
    line: int   # 1-based
    column: int = 0


@dataclass(frozen=True)
class MemoryAccess:
    space: str        # "global" | "local" | "shared" | "constant" | "texture" | "generic" | "distributed"
    width: int        # bits per thread (32, 64, 128, ...)
    load: bool
    store: bool
    atomic: bool = False

    @property
    def plain_load(self) -> bool:
        """A load that neither stores nor is an atomic (any space)."""
        return self.load and not self.store and not self.atomic

    @property
    def global_write(self) -> bool:
        """A store or atomic that may reach global memory (a generic address may be global)."""
        return self.space in ("global", "generic") and (self.store or self.atomic)


@dataclass(frozen=True)
class Instruction:
    offset: int
    opcode: str                      # with modifiers, e.g. "LDG.E.64.CONSTANT"
    operands: tuple[str, ...]        # raw operand strings as nvdisasm prints them
    predicate: str | None = None     # guard register, e.g. "P0" / "UP1" / None; "PT" is folded to None
    predicate_negated: bool = False
    dsts: frozenset[str] = frozenset()   # register names: "R4", "UR6", "P0", "UP0"; pairs/quads expanded
    srcs: frozenset[str] = frozenset()   # idem, predicates and the guard included
    memory: MemoryAccess | None = None
    branch_target: int | None = None     # section offset for BRA/BRX/SSY...
    call_target: str | None = None       # callee function name for CALL
    control: Control | None = None
    loc: SourceLoc | None = None
    inline: tuple[SourceLoc, ...] = ()   # call sites, innermost first: loc was inlined at inline[0], ...
    text: str = ""                       # whole instruction as nvdisasm prints it
    cbank: tuple[tuple[int, int | None], ...] = ()  # c[bank][offset] operands; offset None if register-indexed

    @cached_property
    def base_opcode(self) -> str:
        """``LDG`` for ``LDG.E.64.CONSTANT``. Cached on the instance (asked 10^5 times per analysis by
        the blamer's latency table and the optimizers' opcode families); interned, so the copies
        share one string."""
        return sys.intern(self.opcode.split(".", 1)[0])


@dataclass(frozen=True)
class Block:
    start: int                 # offset of the first instruction
    end: int                   # offset one past the last instruction (start + 16*n)
    instructions: tuple[int, ...]  # offsets


@dataclass(frozen=True)
class Edge:
    src: int    # block start offset
    dst: int    # block start offset (for "call" edges: the callee's entry offset)
    kind: str   # "fallthrough" | "taken" | "not_taken" | "call" | "return" | "exit"


@dataclass(frozen=True)
class Loop:
    header: int                # block start offset of the header
    blocks: frozenset[int]     # block start offsets of the body (header included)
    depth: int                 # 1 = outermost
    parent: int | None         # header offset of the enclosing loop
    file: str | None = None
    line: int | None = None    # source line of the loop (the header's line, or the back edge's)
    line_range: tuple[int, int] | None = None  # min..max source line of instructions in the body (same file)


@dataclass(frozen=True)
class Function:
    name: str                  # mangled symbol name
    section: str               # ".text.<kernel>" section holding it
    entry: bool                # a __global__ kernel
    start: int                 # offset of its first instruction within the section (0 for kernels)
    size: int                  # bytes
    registers: int = 0
    frame_size: int = 0        # local memory per thread (spills, local arrays)
    stack_size: int = 0
    max_threads: int | None = None   # only with __launch_bounds__
    barriers: int = 0
    shared_static: int = 0     # bytes of static shared memory (.nv.shared.<kernel>)
    demangled: str = ""
    instructions: tuple[Instruction, ...] = ()
    blocks: tuple[Block, ...] = ()
    edges: tuple[Edge, ...] = ()
    loops: tuple[Loop, ...] = ()
    callees: tuple[str, ...] = ()

    def instruction_at(self, offset: int) -> Instruction | None:
        idx = (offset - self.start) // 16
        if 0 <= idx < len(self.instructions) and self.instructions[idx].offset == offset:
            return self.instructions[idx]
        for ins in self.instructions:
            if ins.offset == offset:
                return ins
        return None


@dataclass(frozen=True)
class Program:
    sm: int                    # 90 for sm_90
    functions: tuple[Function, ...]
    cubin_sha256: str = ""
    path: str = ""

    def function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    def locate(self, section_or_function: str, offset: int) -> tuple[Function, Instruction] | None:
        """Find the instruction at ``offset`` of the section (or function) named, as a sample reports it."""
        for f in self.functions:
            if (f.name == section_or_function or f.section == section_or_function
                    or f.section == ".text." + section_or_function):
                if f.start <= offset < f.start + f.size:
                    ins = f.instruction_at(offset)
                    if ins is not None:
                        return f, ins
        return None
