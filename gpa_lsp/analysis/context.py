"""What an optimizer sees of one kernel: its functions, their blame, samples, loops, launch.

Built once per kernel by the advisor; optimizers only read it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, repeat
from typing import Any, Callable, Concatenate, Generic, NamedTuple, ParamSpec, TypeVar, overload

from gpa_lsp.profile.model import Device, Kernel, Launch, PCStats
from gpa_lsp.profile.reasons import category as reason_category
from gpa_lsp.sass.model import Function, Instruction, Program

from .blame import BlameEdge, FunctionBlame
from .flow import LoopScope, innermost_loops, loop_scopes
from .occupancy import Occupancy
from .sources import LineReader


class Site(NamedTuple):
    function: Function
    index: int
    instruction: Instruction     # function.instructions[index], stored: optimizers read it per edge


def is_toolkit_header(path: str | None) -> bool:
    """A header of the CUDA toolkit or the system (not a file the user can edit)."""
    if not path:
        return False
    p = path.replace("\\", "/")
    return ("/cuda" in p and "/include/" in p) or p.startswith(("/usr/include/", "/usr/lib/gcc/"))


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
    _innermost_by_fn: dict[str, dict[int, LoopScope]] = field(default_factory=dict)
    _facts: dict = field(default_factory=dict)      # kernel_fact's values for this kernel
    _edges_where: dict = field(default_factory=dict)
    _offsets: dict = field(default_factory=dict)        # function name -> (it, its instructions' offsets)

    def __post_init__(self) -> None:
        sites = self._sites
        new = tuple.__new__     # Site(...) without the NamedTuple's Python-level __new__ (10^5 of them)
        for fb in self.blames:
            fn = fb.function
            for k, ins in enumerate(fn.instructions):
                sites[ins.offset] = new(Site, (fn, k, ins))
        # ``site`` and ``location`` are asked for once or twice per blame edge by every optimizer
        # (10^5 calls on a large kernel): bound dict lookups instead of method calls
        self.site = sites.get
        self.location = self._locations.get

    # --- samples ---------------------------------------------------------------------------
    @cached_property
    def pcs(self) -> dict[int, PCStats]:
        out: dict[int, PCStats] = {}
        for fb in self.blames:
            out.update(fb.samples)
        return out

    @cached_property
    def total_at(self) -> dict[int, int]:
        """offset -> all samples (``PCStats.total``, summed once, by the blamer where it did)."""
        if all(fb.totals is not None for fb in self.blames):
            out: dict[int, int] = {}
            for fb in self.blames:
                out.update(fb.totals)
            return out
        return {o: sum(n for _, n in p.stalls) for o, p in self.pcs.items()}

    @cached_property
    def latency_at(self) -> dict[int, int]:
        """offset -> latency samples (``PCStats.latency``, summed once, by the blamer where it did)."""
        if all(fb.latencies is not None for fb in self.blames):
            out: dict[int, int] = {}
            for fb in self.blames:
                out.update(fb.latencies)
            return out
        return {o: sum(n for _, n in p.not_issued) for o, p in self.pcs.items()}

    @cached_property
    def total(self) -> int:
        return sum(self.total_at.values())

    @cached_property
    def latency(self) -> int:
        return sum(self.latency_at.values())

    @cached_property
    def active(self) -> int:
        return self.total - self.latency

    @cached_property
    def by_category(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        cats: dict[str, str] = {}
        for p in self.pcs.values():
            for r, n in p.stalls:
                c = cats.get(r)
                if c is None:
                    c = cats[r] = reason_category(r)
                out[c] += n
        return dict(out)

    def share(self, category: str) -> float:
        return self.by_category.get(category, 0) / self.total if self.total else 0.0

    @cached_property
    def edges(self) -> list[BlameEdge]:
        return [e for fb in self.blames for e in fb.edges]

    @cached_property
    def _edge_index(self) -> dict[tuple[str, str], list[int]]:
        """(reason, category) -> positions in ``edges``, built in one pass."""
        out: dict[tuple[str, str], list[int]] = {}
        for k, e in enumerate(self.edges):
            key = (e.reason, e.category)
            got = out.get(key)
            if got is None:
                out[key] = [k]
            else:
                got.append(k)
        return out

    def edges_where(self, reasons=None, categories=None, *, not_reasons=()) -> list[BlameEdge]:
        """The edges whose reason is in ``reasons`` (and not in ``not_reasons``) and whose category
        is in ``categories`` (None: any), in ``edges`` order, memoised.

        Why: most optimizers match one or two stall reasons or def classes, and filtering 10^5
        edges through a per-edge ``keep`` in every one of them was a good part of the advisor's
        time. Order is kept so that matched sums add up in the same order as over ``edges``.
        """
        key = (None if reasons is None else frozenset(reasons),
               None if categories is None else frozenset(categories), frozenset(not_reasons))
        got = self._edges_where.get(key)
        if got is None:
            groups = [ks for (r, c), ks in self._edge_index.items()
                      if (reasons is None or r in reasons) and r not in not_reasons
                      and (categories is None or c in categories)]
            edges = self.edges
            if len(groups) == 1:
                got = [edges[k] for k in groups[0]]
            else:
                got = [edges[k] for k in sorted(chain.from_iterable(groups))]   # runs: timsort merges them
            self._edges_where[key] = got
        return got

    # --- structure -------------------------------------------------------------------------
    def site(self, offset: int) -> Site | None:   # replaced per instance by ``_sites.get``
        return self._sites.get(offset)

    @cached_property
    def loops(self) -> dict[str, tuple[LoopScope, ...]]:
        return {fb.function.name: loop_scopes(fb.function, fb.flow) for fb in self.blames}

    def loop_of(self, offset: int) -> LoopScope | None:
        """The innermost loop holding the instruction at ``offset`` (None: in no loop)."""
        return self._loop_at.get(offset)

    @cached_property
    def _loop_at(self) -> dict[int, LoopScope]:
        """Offset -> innermost loop, for every instruction in a loop, built in one pass: asked per
        blame edge by several optimizers and by the advisor's regions (10^5 times)."""
        out: dict[int, LoopScope] = {}
        for fb in self.blames:
            ins = fb.function.instructions
            for k, scope in self._innermost(fb.function.name).items():
                out[ins[k].offset] = scope
        return out

    def _innermost(self, function: str) -> dict[int, LoopScope]:
        got = self._innermost_by_fn.get(function)
        if got is None:
            got = self._innermost_by_fn[function] = innermost_loops(self.loops.get(function, ()))
        return got

    def loop_by_header(self, function: str, header: int) -> LoopScope | None:
        for lp in self.loops.get(function, ()):
            if lp.header_offset == header:
                return lp
        return None

    @cached_property
    def issued_at(self) -> dict[int, int]:
        lat = self.latency_at
        return {o: t - lat[o] for o, t in self.total_at.items()}

    def issued_in(self, function: Function, indices) -> int:
        return self._sum_in(self.issued_at, function, indices)

    def _sum_in(self, got: dict[int, int], function: Function, indices) -> int:
        """``got``'s values at the instructions ``indices`` of ``function`` (0 where absent): ints, so
        the order does not matter; summed without a Python frame per instruction (the loop scopes of
        a kernel of thousands of loops ask for every instruction of every loop)."""
        known = self._offsets.get(function.name)
        if known is None or known[0] is not function:
            known = self._offsets[function.name] = (function, [i.offset for i in function.instructions])
        return sum(map(got.get, map(known[1].__getitem__, indices), repeat(0)))

    @cached_property
    def selected_at(self) -> dict[int, int]:
        """The sampled warp's own issue samples (reason ``selected``) per PC."""
        return {o: p.stall_dict().get("selected", 0) for o, p in self.pcs.items()}

    def selected_in(self, function: Function, indices) -> int:
        return self._sum_in(self.selected_at, function, indices)

    def location(self, offset: int):   # replaced per instance by ``_locations.get``
        s = self.site(offset)
        return s.instruction.loc if s else None

    @cached_property
    def _locations(self) -> dict:
        """Offset -> the source location advice is placed at: the instruction's own line, or, for
        code inlined from the CUDA toolkit's headers (``atomicAdd`` in device_atomic_functions.hpp),
        the innermost call site in the user's code: that is the line the user can change."""
        out = {}
        header: dict[str, bool] = {}    # file -> is_toolkit_header, asked once per file
        for o, s in self._sites.items():
            ins = s.instruction
            loc = ins.loc
            if loc is None:
                continue
            h = header.get(loc.file)
            if h is None:
                h = header[loc.file] = is_toolkit_header(loc.file)
            if h:
                loc = next((c for c in ins.inline if c is not None and not is_toolkit_header(c.file)), loc)
            out[o] = loc
        return out


P = ParamSpec("P")
T = TypeVar("T")


class KernelFact(Generic[P, T]):
    """A fact of one kernel that analyses share: ``compute(ctx, *args)``, computed once per
    :class:`KernelContext` (and arguments) and kept in it. See :func:`kernel_fact`."""

    def __init__(self, compute: Callable[Concatenate[KernelContext, P], T],
                 key: Callable[..., Any] | None = None) -> None:
        self.compute = compute
        self.key = key
        self.__name__ = compute.__name__
        self.__qualname__ = compute.__qualname__
        self.__doc__ = compute.__doc__
        self.__module__ = compute.__module__
        self.__wrapped__ = compute

    def _slot(self, args: tuple, kwargs: dict) -> tuple:
        if self.key is not None:
            return (self, self.key(*args, **kwargs))
        return (self, args, tuple(kwargs.items())) if kwargs else (self, args)

    def __call__(self, ctx: KernelContext, *args: P.args, **kwargs: P.kwargs) -> T:
        facts = ctx._facts
        # _slot's plain case inline: some facts are read once per blame edge (10^5 calls)
        slot = (self, args) if self.key is None and not kwargs else self._slot(args, kwargs)
        try:
            return facts[slot]
        except KeyError:
            got = facts[slot] = self.compute(ctx, *args, **kwargs)
            return got

    def put(self, ctx: KernelContext, value: T, *args: P.args, **kwargs: P.kwargs) -> None:
        """Set the fact for ``ctx`` (a test that needs a given roof, say)."""
        ctx._facts[self._slot(args, kwargs)] = value

    def __repr__(self) -> str:
        return f"<kernel fact {self.__module__}.{self.__qualname__}>"


@overload
def kernel_fact(compute: Callable[Concatenate[KernelContext, P], T]) -> KernelFact[P, T]: ...
@overload
def kernel_fact(*, key: Callable[..., Any]) -> Callable[[Callable[Concatenate[KernelContext, P], T]], KernelFact[P, T]]: ...


def kernel_fact(compute=None, *, key=None):
    """Decorate ``f(ctx, *args)`` into a per-kernel fact: computed on first use, then read.

    Why: several optimizers (and the advisor) need the same derived facts of a kernel (the
    spill instructions, the reloads, the barriers before each instruction, the roof of the loads
    in flight). A fact is the function that computes it, so it has one name, one type and one
    docstring, and whoever needs it calls it; there are no string keys in a shared dict. The
    value lives in the :class:`KernelContext`, which lives for one kernel's analysis: nothing
    outlives it (no module-level cache). ``key`` maps the arguments to the cache key when they
    are not hashable or costly to hash (a ``Function``: ``key=lambda function: function.name``).
    """
    if compute is None:
        return lambda f: KernelFact(f, key)
    return KernelFact(compute, key)
