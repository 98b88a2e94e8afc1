"""How busy each unit was during a launch: Nsight Compute's Speed of Light, per kernel.

Why this exists: PC samples say where warps waited, not how close the memory
system behind them was to its peak. GPA's estimators assume the matched stalls
vanish; a kernel whose L1 is already at 64% of its sustained peak cannot run
more than 1/0.64 = 1.56x faster by any change that leaves the L1's work as it is
(unrolling, reordering, cheaper arithmetic...). That is a bound from the
hardware's own numbers, with no fitted constant: see
``gpa_lsp.analysis.optimizers.base.Optimizer.keeps``.

The measurement is a second, short harness run after the sampling run
(``[profile] throughput = true``): by default CUPTI's Range Profiler in the
injection library (profile/cupti/counters.py: the same metric names, the sampled
kernels' first launches replayed, the run ends once they are measured), else one
``ncu --metrics`` pass (``[profile] throughput_collector``). Both at the
application's clocks (``--clock-control none`` for ncu; CUPTI never locks them:
the clocks the sampled and timed runs see; ncu's default locks them to base,
which makes the memory side look relatively faster). The ncu collector asks for
the same metrics in its own run. Standard library only (runs on the GPU machine).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

# unit -> ncu metric: the share of its sustained peak the unit reached over the launch
UNITS: dict[str, str] = {
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
}
UNIT_TITLES = {"dram": "DRAM", "l2": "L2", "l1": "L1/shared", "sm": "SM pipes", "issue": "issue"}
MEMORY_UNITS = ("dram", "l2", "l1")

DURATION = "gpu__time_duration.sum"
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
CLOCK = "gpc__cycles_elapsed.avg.per_second"
# The launch's amounts beside the shares (``Throughput.duration_ns``, ``dram_bytes``, ``clock_hz``):
# what turns a share into work. DRAM bytes price Memory Transaction Reduction's merged gathers
# (analysis/gathers.merge_estimate) and the coalescing model's DRAM; duration and clock its L1 and
# L2 busy time (analysis/coalescing.model); the duration times a kernel whose launches carry none
# (optimizers/block_increase.kernel_duration_ns). Both collectors measure them (ncu's pass and
# CUPTI's counters run, cupti/counters.py).
AMOUNTS: tuple[str, ...] = (DURATION, *DRAM_BYTES, CLOCK)
METRICS: tuple[str, ...] = (*UNITS.values(), *AMOUNTS)

# ncu's units -> nanoseconds, bytes, hertz
_SCALE = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9,
          "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
          "hz": 1, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "cycle/second": 1, "cycle/usecond": 1e6,
          "cycle/nsecond": 1e9}


@dataclass(frozen=True)
class Throughput:
    """One kernel's unit utilisation, averaged over the launches measured."""

    units: tuple[tuple[str, float], ...]   # (unit, % of sustained peak), units of ``UNITS``
    duration_ns: float | None = None
    dram_bytes: float | None = None
    clock_hz: float | None = None
    launches: int = 1
    clocks: str = "none"                   # ncu --clock-control the numbers were taken with

    def pct(self, unit: str) -> float | None:
        return dict(self.units).get(unit)

    def busiest(self, units: Sequence[str]) -> tuple[str, float] | None:
        """The unit of ``units`` closest to its peak, with its share (%)."""
        got = [(u, p) for u, p in self.units if u in units and p is not None and p > 0]
        return max(got, key=lambda up: up[1]) if got else None

    def to_json(self) -> dict:
        return {"units": dict(self.units), "duration_ns": self.duration_ns, "dram_bytes": self.dram_bytes,
                "clock_hz": self.clock_hz, "launches": self.launches, "clocks": self.clocks}

    @classmethod
    def from_json(cls, d: Mapping) -> "Throughput":
        return cls(units=tuple(sorted((str(k), float(v)) for k, v in d.get("units", {}).items())),
                   duration_ns=d.get("duration_ns"), dram_bytes=d.get("dram_bytes"), clock_hz=d.get("clock_hz"),
                   launches=int(d.get("launches", 1)), clocks=str(d.get("clocks", "none")))


def bound(throughput: Throughput | None, keeps: Sequence[str]) -> tuple[float, str | None]:
    """The most a change can gain when it leaves the work of ``keeps`` units unchanged.

    Each such unit must still do its work at no more than its sustained peak, so the new time is at
    least ``share x T`` for the busiest of them: speedup <= 100 / share. Returns (bound, unit), or
    (inf, None) when nothing was measured or no kept unit was busy.
    """
    if throughput is None or not keeps:
        return float("inf"), None
    top = throughput.busiest(keeps)
    if top is None:
        return float("inf"), None
    unit, pct = top
    return max(1.0, 100.0 / min(pct, 100.0)), unit


def _number(value: str, unit: str) -> float | None:
    try:
        x = float(value.replace(",", "")) * _SCALE.get(unit, 1)
    except ValueError:
        return None
    # "nan"/"inf" parse as floats; a bundle holds finite numbers only (validate.py refuses the rest)
    return x if math.isfinite(x) else None


def parse_raw_csv(text: str, wanted: Collection[str] | None = METRICS) -> list[tuple[str, dict[str, float]]]:
    """``ncu --page raw --csv --print-kernel-base mangled``: (kernel, metric -> number) per launch, in
    order; ``wanted``: the metrics to keep (None: every numeric one)."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    head = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if head is None or len(rows) < head + 2:
        return []
    names, units = rows[head], rows[head + 1]
    try:
        kcol = names.index("Kernel Name")
    except ValueError:
        return []
    wanted = set(wanted) if wanted is not None else None
    out = []
    for r in rows[head + 2:]:
        if len(r) <= kcol:
            continue
        vals = {}
        for n, u, v in zip(names, units, r):
            if wanted is None or n in wanted:
                x = _number(v, u)
                if x is not None:
                    vals[n] = x
        out.append((r[kcol], vals))
    return out


def summarise(rows: Sequence[Mapping[str, float]], clocks: str = "none") -> Throughput | None:
    """The mean over launches of one kernel (each launch's shares weigh the same)."""
    rows = [r for r in rows if any(m in r for m in UNITS.values())]
    if not rows:
        return None

    def mean(metric: str) -> float | None:
        xs = [r[metric] for r in rows if metric in r]
        return sum(xs) / len(xs) if xs else None

    units = tuple(sorted((u, round(v, 3)) for u, m in UNITS.items() if (v := mean(m)) is not None))
    dram = [sum(r[m] for m in DRAM_BYTES if m in r) for r in rows if any(m in r for m in DRAM_BYTES)]
    return Throughput(units=units, duration_ns=mean(DURATION), dram_bytes=sum(dram) / len(dram) if dram else None,
                      clock_hz=mean(CLOCK), launches=len(rows), clocks=clocks)


def describe(units: Sequence[tuple[str, float]]) -> str:
    """``L1/shared 64%, L2 48%, DRAM 46%, issue 40%, SM pipes 35%``: busiest first; the units of
    ``UNITS`` left out are named as not measured (CUPTI's counters run leaves SM pipes out:
    ``L1/shared 64%, L2 48%, DRAM 46%, issue 40% (SM pipes not measured)``)."""
    text = ", ".join(f"{UNIT_TITLES.get(u, u)} {p:.0f}%" for u, p in sorted(units, key=lambda up: -up[1]))
    have = {u for u, _ in units}
    missing = [UNIT_TITLES[u] for u in UNITS if u not in have]
    return f"{text} ({', '.join(missing)} not measured)" if text and missing else text
