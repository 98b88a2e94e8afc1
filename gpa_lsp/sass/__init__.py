"""Static side: a cubin turned into an analysable SASS program.

``load_program(path_or_bytes)`` -> :class:`Program` (one cubin, cached by its
sha256); ``load_programs(path)`` -> every cubin of a cubin or an executable.
CFG helpers for walkers: ``block_graph``, ``instruction_successors``,
``dominator_tree``, ``loop_nest``.
"""

from .arch import ArchSpec, arch_spec, from_device, latency, latency_class
from .cfg import block_graph, dominator_tree, instruction_successors, loop_nest, natural_loops
from .model import (Block, Control, Edge, Function, Instruction, Loop, MemoryAccess, Program,
                    SourceLoc)
from .program import clear_cache, load_program, load_programs

__all__ = [
    "ArchSpec", "arch_spec", "from_device", "latency", "latency_class",
    "Block", "Control", "Edge", "Function", "Instruction", "Loop", "MemoryAccess", "Program", "SourceLoc",
    "block_graph", "clear_cache", "dominator_tree", "instruction_successors", "load_program",
    "load_programs", "loop_nest", "natural_loops",
]
