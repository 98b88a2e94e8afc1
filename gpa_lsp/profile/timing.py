"""Where a collection's time goes: ``GPA_PROFILE_TIMING=1`` makes ``gpa profile`` log each phase.

The injection library has its own marks (``GPA_CUPTI_TIMING``, Z records: loaded, context,
sampling enabled, first launch, exit); this one times the Python side around them (library
lookup, each harness run, reading the output, writing the bundle). Off, it costs a clock read.
Standard library only (runs on the GPU machine).
"""

from __future__ import annotations

import os
import time
from typing import Callable

ENV = "GPA_PROFILE_TIMING"


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc, 10 ms ticks); None elsewhere."""
    try:
        with open("/proc/self/stat", "rb") as f:
            data = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        start_ticks = int(data[data.rindex(b")") + 2:].split()[19])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Marks:
    """Elapsed seconds per phase, logged as ``timing: <phase> <s>`` when enabled."""

    def __init__(self, log: Callable[[str], None] | None = None) -> None:
        self.on = enabled()
        self.log = log or (lambda m: None)
        self.t0 = self.last = time.monotonic()
        self.phases: list[tuple[str, float]] = []

    def __call__(self, phase: str) -> None:
        now = time.monotonic()
        self.phases.append((phase, now - self.last))
        self.last = now
        if self.on:
            self.log(f"timing: {phase} {self.phases[-1][1]:.3f} s (total {now - self.t0:.3f} s)")

    def library_marks(self, marks: list[tuple[str, int]]) -> None:
        """The injection library's Z records (ns since it was loaded)."""
        if self.on:
            for label, ns in marks:
                if label == "clock0":      # where "init" is on CLOCK_MONOTONIC, not a time since it
                    continue
                self.log(f"timing: cupti {label} at {ns / 1e9:.3f} s")
