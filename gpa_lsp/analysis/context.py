"""What an optimizer sees of one kernel: its functions, their blame, samples, loops, launch.

Built once per kernel by the advisor; optimizers only read it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from gpa_lsp.profile.model import Device, Kernel, Launch, PCStats
from gpa_lsp.profile.reasons import category as reason_category
from gpa_lsp.sass.model import Function, Instruction, Program

from .blame import BlameEdge, FunctionBlame
from .flow import LoopScope, innermost_loop, loop_scopes
from .occupancy import Occupancy
from .sources import LineReader


class Site(NamedTuple):
    function: Function
    index: int

    @property
    def instruction(self) -> Instruction:
        return self.function.instructions[self.index]


@dataclass
class KernelContext:
    kernel: Kernel
    program: Program
    entry: Function
    blames: list[FunctionBlame]
    device: Device
    launch: Launch | None
    occupancy: Occupancy | None
    reader: LineReader
    sm: int = 90
    _sites: dict[int, Site] = field(default_factory=dict)
    _loop_cache: dict[int, LoopScope | None] = field(default_factory=dict)
    memo: dict = field(default_factory=dict)       # per-kernel caches optimizers may share

    def __post_init__(self) -> None:
        for fb in self.blames:
            for k, ins in enumerate(fb.function.instructions):
                self._sites[ins.offset] = Site(fb.function, k)

    # --- samples ---------------------------------------------------------------------------
    @cached_property
    def pcs(self) -> dict[int, PCStats]:
        out: dict[int, PCStats] = {}
        for fb in self.blames:
            out.update(fb.samples)
        return out

    @cached_property
    def total(self) -> int:
        return sum(p.total for p in self.pcs.values())

    @cached_property
    def latency(self) -> int:
        return sum(p.latency for p in self.pcs.values())

    @cached_property
    def active(self) -> int:
        return self.total - self.latency

    @cached_property
    def by_category(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for p in self.pcs.values():
            for r, n in p.stalls:
                out[reason_category(r)] += n
        return dict(out)

    def share(self, category: str) -> float:
        return self.by_category.get(category, 0) / self.total if self.total else 0.0

    @cached_property
    def edges(self) -> list[BlameEdge]:
        return [e for fb in self.blames for e in fb.edges]

    # --- structure -------------------------------------------------------------------------
    def site(self, offset: int) -> Site | None:
        return self._sites.get(offset)

    @cached_property
    def loops(self) -> dict[str, tuple[LoopScope, ...]]:
        return {fb.function.name: loop_scopes(fb.function, fb.flow) for fb in self.blames}

    def loop_of(self, offset: int) -> LoopScope | None:
        cache = self._loop_cache
        if offset in cache:
            return cache[offset]
        s = self.site(offset)
        got = None if s is None else innermost_loop(self.loops.get(s.function.name, ()), s.index)
        cache[offset] = got
        return got

    def loop_by_header(self, function: str, header: int) -> LoopScope | None:
        for lp in self.loops.get(function, ()):
            if lp.header_offset == header:
                return lp
        return None

    @cached_property
    def issued_at(self) -> dict[int, int]:
        return {o: p.issued for o, p in self.pcs.items()}

    def issued_in(self, function: Function, indices) -> int:
        got = self.issued_at
        ins = function.instructions
        return sum(got.get(ins[k].offset, 0) for k in indices)

    @cached_property
    def selected_at(self) -> dict[int, int]:
        """The sampled warp's own issue samples (reason ``selected``) per PC."""
        return {o: p.stall_dict().get("selected", 0) for o, p in self.pcs.items()}

    def selected_in(self, function: Function, indices) -> int:
        got = self.selected_at
        ins = function.instructions
        return sum(got.get(ins[k].offset, 0) for k in indices)

    def location(self, offset: int):
        s = self.site(offset)
        return s.instruction.loc if s else None
