"""The analysis worker: one process per workspace folder, watched.

Why a process: the analysis is pure Python and takes hundreds of milliseconds on a real profile;
in a thread it would hold the server's GIL and delay hovers and lenses. Why one per folder: a
bundle is input from another machine, and a damaged cubin can make nvdisasm spin (issue 16); the
folder whose analysis is stuck must not leave the others without results. Why a watchdog: the
tools' own timeouts (``procs.tool_timeout``) bound nvdisasm, but not everything a worker can get
stuck in; a request that outlives :func:`watchdog_s` has its worker killed, with every process
it started, and is reported as an error of that folder. A cancelled analysis kills its worker the
same way (it cannot be interrupted from outside); a cancelled verification is asked to stop and
given a few seconds to remove its scratch copies first. The next request starts a fresh worker.
It also runs the verification phase and applyAndMeasure's comparison (:func:`_ops`).

The worker is spawned (not forked: the server has threads) when its folder is added, at
``initialize``, and imports the analysis then (:func:`_serve`), so the first save does not wait
for it and the server process itself never imports the advisor. It dies with the server
(``procs.die_with_parent``), and ``features.lifecycle.terminate`` kills its tree; a folder's worker ends with the folder.

``GPA_LSP_ANALYSIS_PROCESS=0`` analyses in the server process instead (debugging);
``GPA_LSP_WATCHDOG_S`` overrides the watchdog's limit.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from .. import procs
from ..config import Config
from ..errors import BundleError, GpaError

log = logging.getLogger("gpa_lsp.server")

WATCHDOG_BASE_S = 300.0      # a real analysis takes seconds; its tools have their own timeouts
POLL_S = 0.05
PRELOAD_LIMIT_S = 60.0       # the worker answers a preload at once, once it has imported the analysis
CANCEL_GRACE_S = 5.0         # a cancelled verification cleans up its scratch copies meanwhile


class Cancelled(Exception):
    """The run was superseded by a newer one or cancelled by the user."""


class WorkerStuck(BundleError):
    """The analysis did not finish within the watchdog's limit; its worker was killed."""


def watchdog_s(bundle: str) -> float:
    """How long one analysis of ``bundle`` may take: 300 s plus what its tools may take on its size
    (``procs.tool_timeout``); ``GPA_LSP_WATCHDOG_S`` overrides it."""
    override = os.environ.get("GPA_LSP_WATCHDOG_S")
    if override:
        try:
            value = float(override)
            if value > 0 and value != float("inf"):
                return value
        except ValueError:
            pass
        log.warning("GPA_LSP_WATCHDOG_S=%r is not a positive number of seconds: ignored", override)
    try:
        size = os.path.getsize(bundle)
    except OSError:
        size = 0
    return WATCHDOG_BASE_S + procs.tool_timeout(size)


def in_process() -> bool:
    return os.environ.get("GPA_LSP_ANALYSIS_PROCESS", "1") == "0"


# ---------------------------------------------------------------- what a worker does
#
# An op is ``fn(*args, cancel=Event, progress=fn(i, n, what))``: ``cancel`` is set when the server
# asks the op to stop (an op that can stop early honours it; the server kills the worker after a
# grace period otherwise), ``progress`` reports to the server while it runs.

def _advise(bundle: str, config: Config, *, cancel, progress):
    from ..verify.runner import advise  # deferred: see _ops
    return advise(bundle, config)


def _verify(config: Config, bundle: str, report, dynamic: bool, store: bool, store_path: str | None, *,
            cancel, progress):
    from ..verify.runner import verify_in_editor  # deferred: see _ops
    return verify_in_editor(config, bundle, report, cancel=cancel, dynamic=dynamic, store=store,
                            store_path=store_path, progress=progress)


_preloading = {"cancel": threading.Event()}     # the worker's preload in flight: a newer one stops it


def _preload(executable: str, *, cancel, progress) -> None:
    """Start loading the Programs of ``executable``'s cubins in a thread of the worker and answer at
    once (``sass.program.preload``): the analysis of the bundle that follows finds them cached, or
    waits for the one being loaded. A newer preload stops the previous one between cubins."""
    from ..sass.program import preload  # deferred: see _ops
    _preloading["cancel"].set()
    stop = _preloading["cancel"] = threading.Event()

    def run() -> None:
        t0 = time.monotonic()
        try:
            n = preload(executable, stop)
        except Exception:  # noqa: BLE001 - best effort: the analysis loads (and reports) the cubins itself
            log.warning("preloading the cubins of %s failed", executable, exc_info=True)
            return
        log.debug("preloaded %d cubin(s) of %s in %.3f s", n, executable, time.monotonic() - t0)

    threading.Thread(target=run, name="gpa-preload", daemon=True).start()


def _diff_text(before, after, kernel: str, max_lines: int, *, cancel, progress) -> str:
    from ..analysis.diff import diff_reports, render_diff_text  # deferred: see _ops
    return render_diff_text(diff_reports(before, after, kernel=kernel), max_lines=max_lines)


def _ops() -> dict[str, Callable[..., Any]]:
    """What a worker can be asked: ``preload`` (executable) -> None (answered at once, the work goes
    on in a thread); ``advise`` (bundle, config) -> Report; ``verify`` (config,
    bundle, report, dynamic, store, store_path) -> Report (``verify.runner.verify_in_editor``);
    ``diff_text`` (report before, report after, kernel, max lines) -> str (``gpa diff``'s text,
    for applyAndMeasure)."""
    # deferred: the analysis is imported in the worker process (or in the server process with
    # GPA_LSP_ANALYSIS_PROCESS=0, when it first analyses), never when the server starts
    import gpa_lsp.verify.runner  # noqa: F401 - the advisor, the optimizers, the verification
    return {"preload": _preload, "advise": _advise, "verify": _verify, "diff_text": _diff_text}


def run_here(op: str, *args: Any, cancel: threading.Event | None = None,
             progress: Callable[..., None] = lambda *a: None) -> Any:
    """Do ``op`` in this process (no worker: GPA_LSP_ANALYSIS_PROCESS=0)."""
    return _ops()[op](*args, cancel=cancel or threading.Event(), progress=progress)


def _serve(conn: Connection) -> None:
    """The worker's main: import the analysis, say so, then answer ``(op, args)`` requests with
    ``("ok", result)`` or ``("error", class, args, attributes)``, with ``("progress", ...)`` on the
    way, until the pipe closes. A reader thread takes ``("cancel",)`` while an op runs."""
    procs.die_with_parent()
    ops = _ops()
    send_lock = threading.Lock()
    requests: queue.Queue = queue.Queue()
    current = {"cancel": threading.Event()}

    def send(msg: tuple[Any, ...]) -> None:
        with send_lock:
            conn.send(msg)

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                current["cancel"].set()
                requests.put(None)
                return
            if msg == ("cancel",):
                current["cancel"].set()
            else:
                requests.put(msg)

    threading.Thread(target=read, name="gpa-worker-reader", daemon=True).start()
    send(("ready", os.getpid()))
    while True:
        msg = requests.get()
        if msg is None:
            return
        op, args = msg
        cancel = current["cancel"] = threading.Event()
        try:
            reply: tuple[Any, ...] = ("ok", ops[op](*args, cancel=cancel,
                                                    progress=lambda *p: send(("progress", *p))))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the server, which reports it
            reply = ("error", type(exc), exc.args, dict(vars(exc)))
        try:
            send(reply)
        except Exception as exc:  # noqa: BLE001 - an unpicklable error: send its text
            send(("error", GpaError, (f"the analysis failed: {type(exc).__name__}: {exc}",), {}))


def _rebuild(cls: type, args: tuple, attrs: dict[str, Any]) -> Exception:
    """The worker's exception, with its attributes (``GpaError.hint``, ``BuildError.output``)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(attrs)
    return exc


# ---------------------------------------------------------------- the server side

class AnalysisWorker:
    """One folder's analysis process: :meth:`start` spawns it, :meth:`advise` asks it (one request
    at a time), :meth:`stop` kills it and whatever it started."""

    def __init__(self, name: str) -> None:
        self.name = name                       # the folder, for messages
        self._lock = threading.Lock()          # one request at a time (a folder's run and replay)
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> None:
        """Spawn the process now (it imports the analysis while the server goes on)."""
        if self.alive():
            return
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child,), name=f"gpa-analysis {self.name}", daemon=True)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent

    def stop(self) -> None:
        """Kill the worker and every process it started (nvdisasm and what that started)."""
        proc, conn = self._proc, self._conn
        self._proc, self._conn = None, None
        if proc is None:
            return
        if proc.pid is not None and proc.is_alive():
            procs.kill_tree(proc.pid)
            proc.kill()
        proc.join(timeout=2)
        if conn is not None:
            conn.close()

    def preload(self, executable: str) -> bool:
        """Ask the running worker to load ``executable``'s cubins now (``_preload``), from a thread of
        its own so the caller never waits: skipped (False) when the worker is not started or is
        answering another request (the analysis then loads the cubins itself, as it always can)."""
        if not self.alive():
            return False

        def ask() -> None:
            if not self._lock.acquire(blocking=False):
                return
            try:
                self._ask("preload", (executable,), None, time.monotonic() + PRELOAD_LIMIT_S, PRELOAD_LIMIT_S,
                          "loading the built cubins", lambda *a: None, 0.0)
            except Exception:  # noqa: BLE001 - best effort; the analysis reports what is wrong
                log.debug("preload request to the worker of %s failed", self.name, exc_info=True)
            finally:
                self._lock.release()

        threading.Thread(target=ask, name=f"gpa-preload {self.name}", daemon=True).start()
        return True

    def advise(self, bundle: str, config: Config, cancel: threading.Event | None = None):
        """The worker's report for ``bundle``; raises what the analysis raised, :class:`Cancelled`
        when ``cancel`` is set meanwhile, :class:`WorkerStuck` past the watchdog's limit."""
        return self.call("advise", bundle, config, cancel=cancel, limit=watchdog_s(bundle),
                         what=f"the analysis of {Path(bundle).name}")

    def verify(self, config: Config, bundle: str, report, cancel: threading.Event | None, *, dynamic: bool,
               store: bool, store_path: str | None, progress: Callable[[int, int, str], None]):
        """``verify.runner.verify_in_editor`` in the worker: the fixes tried, within ``[verify]
        budget_s`` (plus the watchdog's limit); cancelling lets it stop and clean up its scratch
        copies for a few seconds before the worker is killed."""
        return self.call("verify", config, bundle, report, dynamic, store, store_path, cancel=cancel,
                         limit=config.verify.budget_s + watchdog_s(bundle), what="trying the fixes",
                         on_progress=progress, grace_s=CANCEL_GRACE_S)

    def call(self, op: str, *args: Any, cancel: threading.Event | None = None, limit: float | None = None,
             what: str = "the analysis", on_progress: Callable[..., None] = lambda *a: None,
             grace_s: float = 0.0) -> Any:
        """``op`` of :func:`_ops` done by the worker (started if it is not running). On ``cancel``
        the op is asked to stop and given ``grace_s``, then the worker is killed."""
        limit = limit if limit is not None else watchdog_s("")
        deadline = time.monotonic() + limit
        while not self._lock.acquire(timeout=POLL_S):        # the folder's other run is analysing
            if cancel is not None and cancel.is_set():
                raise Cancelled()
        try:
            return self._ask(op, args, cancel, deadline, limit, what, on_progress, grace_s)
        finally:
            self._lock.release()

    def _ask(self, op: str, args: tuple, cancel: threading.Event | None, deadline: float, limit: float,
             what: str, on_progress: Callable[..., None], grace_s: float) -> Any:
        if not self.alive():
            self.start()
        assert self._conn is not None
        conn = self._conn
        try:
            conn.send((op, args))
        except (OSError, ValueError) as exc:
            self.stop()
            raise GpaError(f"the analysis worker of {self.name} could not be reached ({exc})",
                           "save again to retry; if it persists, please report it with the server log") from None
        stop_by: float | None = None          # cancelled: the op's grace ends then
        while True:
            if cancel is not None and cancel.is_set() and stop_by is None:
                stop_by = time.monotonic() + grace_s
                if grace_s > 0:
                    try:
                        conn.send(("cancel",))
                    except (OSError, ValueError):
                        stop_by = 0.0
            if stop_by is not None and time.monotonic() >= stop_by:
                self.stop()            # it did not stop in time (or cannot): the next request starts a new worker
                raise Cancelled()
            if time.monotonic() > deadline:
                pid = self.pid
                self.stop()
                log.warning("%s in %s stopped by the watchdog after %.0f s (worker %s)", what, self.name, limit, pid)
                raise WorkerStuck(
                    f"{what} did not finish within {limit:.0f} s and was stopped "
                    "(a damaged cubin can make nvdisasm spin)",
                    "re-record the bundle, or check its cubins with `gpa disasm`; the other folders are not affected")
            try:
                if not conn.poll(POLL_S):
                    continue
                reply = conn.recv()
            except (EOFError, OSError):
                code = self._proc.exitcode if self._proc is not None else None
                self.stop()
                if stop_by is not None:
                    raise Cancelled() from None
                raise GpaError(f"the analysis worker of {self.name} stopped unexpectedly (exit code {code})",
                               "save again to retry; if it persists, please report it with the server log") from None
            if reply[0] == "ready":        # it has imported the analysis
                continue
            if reply[0] == "progress":
                if stop_by is None:
                    on_progress(*reply[1:])
                continue
            if stop_by is not None:
                raise Cancelled()      # it stopped in time; the worker stays
            if reply[0] == "ok":
                return reply[1]
            raise _rebuild(*reply[1:])
