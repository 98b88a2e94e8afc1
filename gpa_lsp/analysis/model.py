"""Advice and report: what the advisor hands to the presenters (CLI, SARIF, LSP).

Plain immutable data with a ``to_json`` form (``dump_report``/``load_report`` for a whole
Report: the JSON is written and read here only); locations carry the build-time path after
source-path mapping has been applied by whoever produced them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types as pytypes
import typing
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from ..profile.throughput import UNIT_TITLES
from ..config import RECOMMENDED
from ..verify.model import Verification

# samples per kernel below which advice is marked low confidence ([profile] min_samples aims above it)
MIN_SAMPLES = 10_000


class ChangeKind(StrEnum):
    """What an advice asks to change (``Optimizer.kind``, ``Advice.kind``): the code, or the launch
    (its grid and block, priced by GPA's parallel model). Defined here with the advice that carries
    it, so that presenters read it without importing the optimizers; ``optimizers.base`` exports it
    for the optimizers. The values are what the JSON report and SARIF print."""
    code = "code"
    parallel = "parallel"


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    function: str = ""        # mangled function name
    offset: int | None = None # SASS offset within the section


@dataclass(frozen=True)
class Hotspot:
    """One blamed def -> use pair: the stall was seen at ``use``, caused by ``def_``."""

    def_: Location           # JSON key "def"
    use: Location
    distance: int            # instructions on the longest surviving path
    samples: float           # blamed samples matched by the optimizer
    ratio: float             # samples / all samples of the kernel
    reason: str = ""         # GPA category of the blamed stall ("memory_dependency", ...)


@dataclass(frozen=True)
class HotRegion:
    kind: str                # "loop" | "function" | "kernel"
    name: str                # function name, or "loop at k.cu:19"
    file: str
    line_range: tuple[int, int]
    samples: float
    ratio: float
    hotspots: tuple[Hotspot, ...] = ()


@dataclass(frozen=True)
class Fix:
    """What to change and where; the language server turns it into a WorkspaceEdit.

    kinds and their params:
      float_literal: {"columns": [[start, end], ...]}  0-based columns of double literals on ``line``
      unroll:        {"factor": 2, "less": bool}        pragma before the loop whose header is at ``line``;
                                                        ``less``: meant to unroll less (Loop No-Unroll)
      restrict:      {"function": name, "parameter": first, "parameters": [names]}
      inline / noinline: {"function": name}
      fast_math:     {"flag": "--use_fast_math"}       build configuration, no source line
      block_size:    {"size": 256, "current": 16}       launch site at ``line``
    """

    kind: str
    file: str | None
    line: int | None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Advice:
    optimizer: str           # id, e.g. "loop_unrolling"
    title: str               # "Loop Unrolling"
    kind: ChangeKind         # a code or a launch change
    estimated_speedup: float # >= 1.0
    ratio: float             # matched samples / all kernel samples
    matched_samples: float
    suggestion: str
    location: Location | None = None          # where the diagnostic goes (the blamed def's line)
    regions: tuple[HotRegion, ...] = ()
    hotspots: tuple[Hotspot, ...] = ()        # the top hotspots over all regions
    fix: Fix | None = None
    # the range the method's own assumptions allow (see Optimizer.estimate_range); None: no range
    estimate_low: float | None = None
    estimate_high: float | None = None
    # the memory-system bound (Optimizer.throughput_bound) when it lowered the estimate: the unit
    # (throughput.UNITS key) and its measured share of peak (%), or "mlp" and the DRAM share the
    # code's loads in flight can reach (analysis/parallelism.py)
    bounded_by: str | None = None
    bounded_pct: float | None = None
    # the fix tried: compiled and compared, or timed on a GPU (gpa_lsp/verify); None: not tried
    verification: Verification | None = None
    kernel_samples: int = 0                   # the kernel's samples (the share's denominator)
    # the estimator hides matched latency (Eq. 3-5, Estimator.hides_latency): ``ratio`` counts the
    # matched latency samples; else the stall samples the change removes. Carried here so that the
    # presenters word the share without importing the optimizers.
    hides_latency: bool = False

    @property
    def sampling_interval(self) -> tuple[float, float]:
        """95% interval of the estimate from the sampling error of its matched share alone.

        The matched share r = matched / N of the kernel's N samples is a binomial proportion:
        r +- 1.96 sqrt(r (1 - r) / N). Every estimator's gain is close to linear in r over such a
        small range, so the gain (estimate - 1) is scaled by r_low / r and r_high / r.
        """
        r = self.ratio
        n = self.kernel_samples
        if r <= 0 or n <= 0 or self.matched_samples <= 0:
            return self.estimated_speedup, self.estimated_speedup
        r = min(r, 1.0)
        half = 1.96 * math.sqrt(max(r * (1.0 - r), 0.0) / n)
        gain = self.estimated_speedup - 1.0
        return 1.0 + gain * max(r - half, 0.0) / r, 1.0 + gain * min(r + half, 1.0) / r

    @property
    def low_confidence(self) -> bool:
        """Too few samples to trust the figure: under MIN_SAMPLES in the kernel, or the sampling
        interval wider than 10% of the estimate."""
        lo, hi = self.sampling_interval
        return self.kernel_samples < MIN_SAMPLES or (hi - lo) > 0.10 * self.estimated_speedup

    @property
    def marginal(self) -> bool:
        """Under ``RECOMMENDED``: shown, not recommended (the figure that ranks it, measured first)."""
        return self.effective_speedup < RECOMMENDED

    def confidence_text(self) -> str:
        return f"low confidence: {self.kernel_samples} samples" if self.low_confidence else ""

    @property
    def effective_speedup(self) -> float:
        """What ranks the advice and sets its severity: measured, else re-estimated, else estimated."""
        v = self.verification.effective if self.verification is not None else None
        return self.estimated_speedup if v is None else v

    def bound_text(self) -> str:
        """``bounded by L1/shared at 64% of its peak`` when the memory-system bound lowered the estimate."""
        if not self.bounded_by:
            return ""
        if self.bounded_by == "mlp":
            reach = f" reach {self.bounded_pct:.0f}% of its peak" if self.bounded_pct else " limit it"
            return f"bounded by DRAM: the loads this code keeps in flight{reach}"
        if self.bounded_by == "stream":
            return ("bounded by DRAM: this stream's loads in flight pull its bytes while the rest of its "
                    "time is issue work (benchmarks/coalescing, the loop-free probe)")
        if self.bounded_by == "rows":
            pct = f"{self.bounded_pct:.0f}% of its peak; " if self.bounded_pct else ""
            return ("bounded by DRAM: gathered rows read a warp per row reach less than a sequential stream "
                    f"({pct}benchmarks/coalescing, the row-gather probe)")
        if self.bounded_by == "resident":
            return ("bounded by reading what the L2 keeps between launches (the L2 residency probe, "
                    "benchmarks/residency; a device without its own takes its chip's, scaled to its L2)")
        pct = f" at {self.bounded_pct:.0f}% of its peak" if self.bounded_pct else ""
        return f"bounded by {UNIT_TITLES.get(self.bounded_by, self.bounded_by)}{pct}"


@dataclass(frozen=True)
class LineStats:
    """Everything the hover and the line heat need for one source line of a kernel."""

    file: str
    line: int
    samples: int                                  # own samples
    issued: int
    by_reason: tuple[tuple[str, int], ...]        # own samples by raw reason
    blamed: float = 0.0                           # stalls blamed on this line's instructions
    blamed_by_category: tuple[tuple[str, float], ...] = ()
    blamed_from: tuple[tuple[str, int, float], ...] = ()  # (file, line, samples) where those stalls were seen
    instructions: tuple[tuple[int, str, int], ...] = ()   # (offset, SASS text, samples)


@dataclass(frozen=True)
class KernelReport:
    name: str
    demangled: str
    samples: int
    share: float                 # of all samples in the profile
    limiter: str                 # "latency" | "memory" | "compute" | "synchronization" | "instruction_fetch"
    advice: tuple[Advice, ...]
    lines: tuple[LineStats, ...] = ()
    file: str | None = None      # the kernel's definition file and line
    line: int | None = None
    launches: int = 0
    duration_ns: int | None = None
    stall_breakdown: tuple[tuple[str, int], ...] = ()  # by GPA category
    throughput: tuple[tuple[str, float], ...] = ()      # (unit, % of sustained peak), when measured


@dataclass(frozen=True)
class Report:
    device: dict[str, Any]
    collector: str
    kernels: tuple[KernelReport, ...]
    total_samples: int = 0
    source: str = ""             # bundle path
    problems: tuple[str, ...] = ()   # what was skipped and why (a cubin nvdisasm could not read)


# ---- Report <-> JSON: the one place that writes and reads it ------------------------------------
# ``gpa analyze --json`` prints ``dump_report``; the language server's cache (server/cache.py)
# stores it and reads it back with ``load_report``.

_JSON_KEYS = {"def_": "def", "yield_": "yield"}       # Python names that are keywords in JSON's readers
_PRIMITIVES = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {_JSON_KEYS.get(k, k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def to_json(obj: Any) -> Any:
    """JSON-ready form of any dataclass above (``def_`` spelled ``def``)."""
    return _jsonable(asdict(obj))


def dump_report(report: Report) -> dict[str, Any]:
    """The report as JSON data (``load_report`` reads it back)."""
    return to_json(report)


def load_report(data: Any) -> Report:
    """A :class:`Report` from ``dump_report``'s JSON; TypeError when it is not one.

    Checked like any input: a hand-edited or half-written cache file must not reach the presenters
    as a string where a number belongs."""
    return _decode(Report, data)


def _decode(tp: Any, value: Any) -> Any:
    """``value`` (JSON) as a ``tp``; TypeError when it is not one."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, pytypes.UnionType):
        if value is None and type(None) in typing.get_args(tp):
            return None
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(args[0], value) if len(args) == 1 else value
    if tp is Any:
        return value
    if value is None:
        raise TypeError(f"expected {getattr(tp, '__name__', tp)}, got null")
    if tp in _PRIMITIVES:
        if not isinstance(value, _PRIMITIVES[tp]) or (tp is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {tp.__name__}, got {type(value).__name__}")
        if tp is str and "\0" in value:       # a NUL in a path makes every use of it raise
            raise TypeError("a string with a NUL")
        if tp in (int, float) and not value >= 0:   # no count, line, share or estimate is negative (or NaN)
            raise TypeError(f"expected a non-negative number, got {value}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise TypeError(f"expected a {tp.__name__}, got {value!r}") from None
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"expected an object for {tp.__name__}, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            key = _JSON_KEYS.get(f.name, f.name)
            if key in value:
                kwargs[f.name] = _decode(hints[f.name], value[key])
        return tp(**kwargs)
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in value)
        if len(args) != len(value):
            raise TypeError(f"expected {len(args)} items, got {len(value)}")
        return tuple(_decode(a, v) for a, v in zip(args, value))
    return value
