"""Unit throughput from CUPTI's Range Profiler: the injection library's counters mode.

Why a run of its own: on the H100 (CUPTI 13.0.1) enabling the Range Profiler silently stops PC
sampling in the same process, the L2, L1 and SM throughput metrics need 4 to 8 replay passes of
a launch, and the PM Sampling API hung or answered NOT_SUPPORTED (benchmarks/profiling/README.md).
So after the sampling run the harness runs once more with ``GPA_CUPTI_MODE=counters``: the first
launch of each sampled kernel is replayed (kernel replay, auto range) for ``METRICS`` (unit
shares and the launch's amounts, Nsight Compute's own names), and the process exits as soon as
every kernel is measured (the rest of the harness is not needed). This replaces the
``ncu --metrics`` pass, whose process start-up and interception of every launch cost more than
the harness; ncu stays the fallback (``[profile] throughput_collector``).

Records read here (the library writes them, see gpa_inject.c): ``N`` (metric table), ``G``
(passes), ``U`` (one measured launch), ``E`` (errors), ``F`` (the process exited once all was measured), ``END``. Standard
library only: this runs on the GPU machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..throughput import AMOUNTS, UNITS
from . import OUTPUT

# What this run measures: the unit shares that bound an estimate (DRAM, L2, L1/shared: the
# ``keeps`` of the optimizers, analysis/optimizers/base.py) and issue (shown), and the launch's
# amounts the models read (``throughput.AMOUNTS``: DRAM bytes, duration, SM clock), under ncu's
# names, so a CUPTI bundle's ``Throughput`` holds the same fields as an ncu bundle's.
# The amounts cost 4 of the library's replay passes on the H100 (14 instead of 10; Perfworks on the
# host counts 4 either way) and no measurable time: probe's chase replayed in 0.565 s with or without
# them (benchmarks/profiling/README.md).
# Left out: SM pipes, 8 of the passes by itself (benchmarks/profiling/metric_passes.c), and it bounds
# no estimate from this run: no optimizer keeps it, and its one reader, the coalescing model
# (analysis/coalescing.py), needs each access's sector counts, which only ncu's source counters
# bring (a CUPTI bundle has none). The editor shows it as not measured; the ncu collector and
# ``throughput_collector = "ncu"`` measure it.
COUNTER_UNITS: tuple[str, ...] = ("dram", "l2", "l1", "issue")
SHARES: tuple[str, ...] = tuple(UNITS[u] for u in COUNTER_UNITS)
METRICS: tuple[str, ...] = (*SHARES, *AMOUNTS)
# launches measured per kernel: the first, like ``ncu --launch-count`` per kernel; each is
# replayed once per pass, so a kernel of seconds costs seconds per pass
LAUNCHES_PER_KERNEL = 1
# the library's GPA_MAX_FILTERS: names beyond it are not sampled or measured by name
MAX_KERNEL_NAMES = 32


@dataclass
class CounterRun:
    rows: list[tuple[str, dict[str, float]]] = field(default_factory=list)   # (kernel, metric -> value)
    errors: list[str] = field(default_factory=list)
    passes: int | None = None
    complete: bool = False
    exited_early: bool = False
    marks: list[tuple[str, int]] = field(default_factory=list)   # Z records (GPA_CUPTI_TIMING)


def env(kernels: Sequence[str], *, launches: int = LAUNCHES_PER_KERNEL, metrics: Sequence[str] = METRICS,
        exit_when_done: bool = True) -> dict[str, str]:
    """The injection library's environment for a counters run of ``kernels`` (mangled names)."""
    out = {"GPA_CUPTI_MODE": "counters", "GPA_CUPTI_METRICS": ",".join(metrics),
           "GPA_CUPTI_COUNTER_LAUNCHES": str(max(1, launches))}
    if kernels:
        out["GPA_CUPTI_KERNELS"] = kernel_filter(kernels)
    if exit_when_done and kernels:
        out["GPA_CUPTI_EXIT_WHEN_DONE"] = "1"
    return out


def kernel_filter(names: Sequence[str]) -> str:
    """``GPA_CUPTI_KERNELS``: one name a line (C++ names hold commas), at most MAX_KERNEL_NAMES."""
    clean = [n for n in dict.fromkeys(names) if n and "\n" not in n]
    return "\n".join(clean[:MAX_KERNEL_NAMES])


def _value(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def parse(text: str) -> CounterRun:
    """The records of a counters run (``cupti.txt``)."""
    run = CounterRun()
    names: dict[str, dict[int, str]] = {}
    for line in text.splitlines():
        parts = line.split(" ")
        tag = parts[0]
        try:
            if tag == "N":
                names.setdefault(parts[1], {})[int(parts[2])] = parts[3]
            elif tag == "G":
                run.passes = int(parts[2])
            elif tag == "U":
                table = names.get(parts[1], {})
                n = len(table)
                values = parts[5:5 + n]
                kernel = " ".join(parts[5 + n:])
                if len(values) < n or not kernel:
                    continue
                row = {table[i]: v for i, raw in enumerate(values) if (v := _value(raw)) is not None}
                run.rows.append((kernel, row))
            elif tag == "E":
                run.errors.append(" ".join(parts[3:]) + f" (CUPTI error {parts[2]})")
            elif tag == "F":
                run.exited_early = True
            elif tag == "Z":
                run.marks.append((parts[1], int(parts[2])))
            elif tag == "END":
                run.complete = True
        except (IndexError, ValueError):
            continue   # a line cut short
    return run


def read(folder: str | Path) -> CounterRun:
    path = Path(folder) / OUTPUT
    if not path.is_file():
        return CounterRun(errors=["the injection library wrote nothing (the harness used no CUDA?)"])
    return parse(path.read_text(errors="replace"))


def why_not(run: CounterRun) -> str:
    """What to say when a counters run measured nothing."""
    if run.errors:
        return "CUPTI's Range Profiler failed: " + "; ".join(run.errors[:3])
    if not run.complete:
        return "the harness ended before the injection library's last record"
    return "no launch of the sampled kernels was measured"


def by_kernel(rows: Sequence[tuple[str, Mapping[str, float]]]) -> dict[str, int]:
    """Launches measured per kernel (for notes and tests)."""
    out: dict[str, int] = {}
    for k, _ in rows:
        out[k] = out.get(k, 0) + 1
    return out
