"""Dynamic what-if: the original and the variants timed by the project's own harness on the GPU.

Each run is the configured harness, unchanged, with the CUPTI injection library in its
durations-only mode (``GPA_CUPTI_NO_PCSAMPLING``: kernel activity records, no PC sampling, so
the kernels run at full speed). The runs are interleaved, original first in every round
(``timing.schedule``), so drift in clocks and temperature reaches every variant alike. Builds and
runs happen in scratch copies (``scratch.py``); every process is run by ``profile.harness`` (own
process group, killed on timeout and cancel).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..build import build
from ..errors import GpaError
from ..profile import harness
from ..profile.collect import _harness_parts
from ..profile.cupti.builder import find_cupti, injection_library
from ..profile.cupti.reader import read_output
from ..profile.demangle import base_name, demangle_all
from . import timing
from .scratch import Scratch


@dataclass
class Timed:
    """Per-run figures (ns, ``timing.per_run``) of one program, in schedule order."""

    runs: list[float] = field(default_factory=list)
    device: str = ""
    failure: str | None = None


def build_program(s: Scratch, cancel: threading.Event | None = None) -> str:
    """Build a scratch copy; the path of its program (raises BuildError with the compiler output)."""
    res = build(s.config, cancel)
    res.check()
    return res.output or ""


def run_once(s: Scratch, output: str | None, kernel: str, cancel: threading.Event | None = None) -> tuple[float | None, str]:
    """One harness run of a scratch copy: (the kernel's per-run duration in ns, the device name)."""
    # by the kernel's bare name: a fix may change its mangled name (const on a pointer parameter)
    base = base_name(demangle_all([kernel]).get(kernel, kernel))
    cupti = find_cupti()
    lib = injection_library(cupti)
    command, cwd, env = _harness_parts(s.config, output)
    with tempfile.TemporaryDirectory(prefix="gpa-time-") as tmp:
        env.update({"CUDA_INJECTION64_PATH": str(lib), "GPA_CUPTI_OUT": tmp, "GPA_CUPTI_NO_PCSAMPLING": "1"})
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(cupti.libdir), os.environ.get("LD_LIBRARY_PATH", "")) if p)
        res = harness.run(command, cwd=cwd, env=env, timeout=s.config.harness.timeout, cancel=cancel)
        run = read_output(tmp, kernels=[base], output_tail=res.output_tail, require_samples=False)
    names = demangle_all(list(run.durations))
    durations = [d for name, ds in run.durations.items() if base_name(names.get(name, name)) == base for d in ds]
    return timing.per_run(durations), run.profile.device.name


def time_programs(programs: Sequence[tuple[Scratch, str]], kernel: str, *, pairs: int = timing.MIN_PAIRS,
                  cancel: threading.Event | None = None, log: Callable[[str], None] = lambda m: None,
                  deadline: float | None = None) -> list[Timed]:
    """Time ``programs`` (index 0: the original) round by round; a program that fails stops being run."""
    out = [Timed() for _ in programs]
    for r in range(pairs):
        for i, (s, exe) in enumerate(programs):
            if out[i].failure or (i and out[0].failure):
                continue
            if deadline is not None and time.monotonic() > deadline:
                for t in out:
                    t.failure = t.failure or f"the time budget ran out after {r} round(s)"
                return out
            try:
                ns, device = run_once(s, exe, kernel, cancel)
            except GpaError as exc:
                out[i].failure = exc.message
                continue
            if ns is None:
                out[i].failure = f"the harness launched no kernel matching {kernel}"
                continue
            out[i].runs.append(ns)
            out[i].device = device
        log(f"round {r + 1}/{pairs} timed")
    return out
