"""The modules `gpa profile` needs only once the harness runs, imported while it runs.

A warm `gpa profile` of a 0.4 s harness is mostly fixed costs (benchmarks/profiling/README.md),
and the harness's run is the one long wait in it: the modules that read the collector's output,
write the bundle, key the throughput cache and drive ncu (with the model, the ELF reader, the
bundle's validator and zipfile behind them) are imported in a thread started with the harness
(:meth:`LateImports.start`), so their import time is spent while the harness runs instead of
before it starts. Code that uses them imports them locally after :meth:`LateImports.wait`:
the wait keeps two threads from importing the same modules at once (no partly initialised
module is ever seen), and costs nothing once the thread is done. Nothing changes but when the
modules are imported: a process that never starts the thread imports them where they are used.
"""

from __future__ import annotations

import importlib
import threading

MODULES = (
    "gpa_lsp.profile.model",
    "gpa_lsp.profile.cubins",
    "gpa_lsp.profile.demangle",
    "gpa_lsp.profile.cupti.reader",
    "gpa_lsp.profile.bundle",
    "gpa_lsp.profile.cupti.throughput_cache",
    "gpa_lsp.profile.device",
    "gpa_lsp.profile.ncu",
)


class LateImports:
    def __init__(self, modules: tuple[str, ...] = MODULES) -> None:
        self.modules = modules
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            for name in self.modules:
                importlib.import_module(name)
        except BaseException as exc:   # noqa: BLE001 - raised again where the module is imported
            self.error = exc

    def start(self) -> None:
        """Import the modules in a daemon thread, once per process."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpa-late-imports", daemon=True)
                self._thread.start()

    def wait(self) -> None:
        """Return once the thread (if started) is done; the caller then imports what it needs (an
        import that failed in the thread fails again there, with its own traceback)."""
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()


LATE = LateImports()
