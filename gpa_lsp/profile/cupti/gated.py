"""The counters run started while the sampling run still goes, told what to measure when it is done.

Why it was tried: the counters run (counters.py) costs a fixed ~1.7 s on the H100 whatever the
harness, and ~0.6 s of it comes before any launch is measured (the process and CUDA's context,
CUPTI's profiler and the config image). Which kernels to measure is known only once the sampling
run's samples are read, but the start-up could overlap it. With ``GPA_CUPTI_GATE`` the injection
library makes the counters run wait at its first context's creation (no allocation or launch of
the harness's own yet: nothing runs on the GPU beside the sampling run but an idle context) until
the gate file appears; it holds the kernel names.

What the H100 said (benchmarks/profiling/README.md, bench_one_run.issue17.h100.json): it works,
but saves only 0.05-0.16 s (the context is all that overlaps), the sampling run brought a steady
0.2% fewer samples beside the waiting context, and setting up CUPTI's profiler before the gate
(initialize, counter availability, config image: what would have saved ~0.4 s more) made the
sampling process lose every sample in 10 of 12 runs (CUPTI_ERROR_UNKNOWN), so that is not done. Off by
default: ``GPA_COUNTERS_OVERLAP=1`` in gpa's environment turns it on; never where the GPU's
compute mode is exclusive (a second context would fail, or take the GPU from the sampling run).
A harness that takes a lock or a fixed port before its first CUDA call would meet its own twin
there. Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Sequence

from ...errors import HarnessError
from .. import harness
from . import counters as counters_mod

GATE = "gate"


class GatedRun:
    """A counters run of the harness, started now, measuring nothing until :meth:`open`."""

    def __init__(self, command, cwd, env: Mapping[str, str], *, timeout: float) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="gpa-counters-"))
        env = {**dict(env), "GPA_CUPTI_OUT": str(self.folder), "GPA_CUPTI_GATE": str(self.folder / GATE)}
        self._stop = threading.Event()
        self._error: HarnessError | None = None
        self._opened = False
        self._thread = threading.Thread(target=self._run, args=(command, cwd, env, timeout), daemon=True,
                                        name="gpa-gated-counters")
        self._thread.start()

    def _run(self, command, cwd, env, timeout) -> None:
        try:
            harness.run(command, cwd=cwd, env=env, timeout=timeout, cancel=self._stop)
        except HarnessError as exc:
            self._error = exc

    def open(self, kernels: Sequence[str]) -> None:
        """Name the kernels to measure (mangled names, hottest first): the run goes on."""
        text = counters_mod.kernel_filter(kernels)
        tmp = self.folder / (GATE + ".tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, self.folder / GATE)      # whole, never half written
        self._opened = True

    def wait(self, cancel: threading.Event | None = None, keep: Path | None = None
             ) -> tuple[counters_mod.CounterRun, HarnessError | None]:
        """Wait for the run's end: (what the library wrote, the harness's error if it failed);
        ``keep``: a folder to copy the library's output to (as counters.txt)."""
        while self._thread.is_alive():
            self._thread.join(0.05)
            if cancel is not None and cancel.is_set():
                self._stop.set()
        try:
            if keep is not None and (self.folder / "cupti.txt").exists():
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(self.folder / "cupti.txt", keep / "counters.txt")
            return counters_mod.read(self.folder), self._error
        finally:
            self.close()

    def abort(self) -> None:
        """Kill the run (the sampling run failed, or there is nothing to measure)."""
        self._stop.set()
        self._thread.join()
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
