"""The run state machine: when a folder runs, what it replays, and what a run's end publishes.

Two layers. :class:`Runner` is one folder's queue of runs: debounce, one run
at a time, a newer request cancels the run in flight (its cancel event
reaches the build and the harness, which kill their processes) and waits for
it to wind down before starting the next. :class:`Runs` decides, per folder,
whether a request runs at all (trust, configuration, settings not known
yet), which runner takes it (``runner``: build -> profile -> analyse;
``replayer``: the recorded bundle only), reports the stages as status and
work-done progress, and publishes an :class:`~pipeline.Outcome`. What kind
of run an outcome came from is its ``mode`` (``pipeline.RunMode``), never
read from its note.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

from lsprotocol import types
from pygls.uris import from_fs_path

from . import trust
from .features import diagnostics
from .folder import Folder
from .pipeline import Outcome, execute
from .results import index

if TYPE_CHECKING:  # the server imports this module
    from .server import GpaLanguageServer

NOT_CONFIGURED = ("this folder has no gpa.toml (or [tool.gpa]): add one with [build] sources and "
                  "[harness] command to profile on save; see the gpa.toml example in the docs")


class Runner:
    """Debounced, cancellable runs of ``job`` (a sync function of a cancel event) for one folder."""

    def __init__(self, job: Callable[[threading.Event], Outcome], on_done: Callable[[Outcome], Any],
                 executor: Executor | None = None) -> None:
        self._job = job
        self._on_done = on_done
        self._executor = executor
        self._lock = asyncio.Lock()
        self._generation = 0
        self._cancel: threading.Event | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task | None = None
        self.running = False

    def request(self, delay_ms: int = 0) -> None:
        """Ask for a run after ``delay_ms`` of quiet; a newer request restarts the wait and cancels the run in flight."""
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
        if self._cancel is not None:
            self._cancel.set()
        self._generation += 1
        gen = self._generation
        self._timer = loop.call_later(max(0, delay_ms) / 1000.0, lambda: self._spawn(gen))

    def _spawn(self, gen: int) -> None:
        self._timer = None
        self.task = asyncio.ensure_future(self._run(gen))

    def cancel(self) -> bool:
        """Cancel what is pending or running; True when there was something."""
        had = self._timer is not None or self.running
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._generation += 1
        if self._cancel is not None:
            self._cancel.set()
        return had

    async def _run(self, gen: int) -> Outcome | None:
        async with self._lock:
            if gen != self._generation:
                return None            # superseded while waiting for the previous run to stop
            cancel = threading.Event()
            self._cancel = cancel
            self.running = True
            try:
                outcome = await asyncio.get_running_loop().run_in_executor(self._executor, self._job, cancel)
            finally:
                self.running = False
                self._cancel = None
            if cancel.is_set() and not outcome.cancelled:
                outcome = Outcome(cancelled=True, hashes=outcome.hashes)
            res = self._on_done(outcome)
            if asyncio.iscoroutine(res):
                await res
            return outcome

    async def wait_idle(self) -> None:
        while self._timer is not None or (self.task is not None and not self.task.done()):
            await asyncio.sleep(0.02)


def result_summary(folder: Folder) -> str | None:
    """The top advice of the folder's analysis in a few words (``gpa/status``'s ``result``)."""
    rep = folder.analysis.report if folder.analysis else None
    if rep is None or not rep.kernels:
        return None
    top = [(a.estimated_speedup, k, a) for k in rep.kernels for a in k.advice]
    if not top:
        return f"{len(rep.kernels)} kernels, no advice"
    s, k, a = max(top, key=lambda t: t[0])
    return f"{a.title} {s:.2f}x on {k.demangled or k.name}"


class Runs:
    """The runs of every folder of one server."""

    def __init__(self, ls: GpaLanguageServer) -> None:
        self.ls = ls
        self.progress_tokens: dict[Any, str] = {}

    # ---- starting runs ---------------------------------------------------------------
    def attach(self, folder: Folder) -> None:
        """Give a new folder its runner (build -> profile -> analyse) and the threads its runs use:
        its own, so that a folder whose runs are stuck (a harness up to its timeout, an analysis up
        to the watchdog's) never holds the threads another folder's runs need."""
        folder.threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"gpa-run-{folder.root.name}")
        folder.runner = Runner(lambda cancel: self._job(folder, cancel, True),
                               lambda outcome: self.on_outcome(folder, outcome), folder.threads)

    def request(self, folder: Folder, delay_ms: int | None = None, why: str = "save") -> None:
        """A save, a change on disk or a command asks for a run of ``folder``."""
        ls = self.ls
        if not folder.ready:
            folder.pending = why        # settings (and so trust) are not known yet: run once they are
            return
        if not folder.trusted and why != "command":
            ls.status(folder, "untrusted", trust.ENABLE_HINT)
            ls.tell_once(folder, "untrusted", types.MessageType.Info, "gpa: " + trust.ENABLE_HINT)
            return
        if why != "command" and not folder.configured:
            # any CUDA folder opened in the editor: do not try (and fail) to profile it on every save
            ls.status(folder, "idle", NOT_CONFIGURED)
            ls.tell_once(folder, "unconfigured", types.MessageType.Info, "gpa: " + NOT_CONFIGURED)
            return
        assert folder.runner is not None
        if folder.replayer is not None:
            folder.replayer.cancel()      # a fresh run supersedes showing the recorded bundle
        folder.runner.request(folder.config.server.debounce_ms if delay_ms is None else delay_ms)

    def replays(self, folder: Folder) -> bool:
        """Whether a run of this folder would only replay its recorded bundle."""
        return (not folder.trusted or folder.config.profile.collector == "replay"
                or not self.ls.stages.has_gpu() or folder.analysis is None)

    def replay(self, folder: Folder, delay_ms: int = 0) -> None:
        """Analyse the configured bundle (no build, no harness), whatever the trust."""
        if folder.replayer is None:
            folder.replayer = Runner(lambda cancel: self._job(folder, cancel, False),
                                     lambda outcome: self.on_outcome(folder, outcome), folder.threads)
        folder.replayer.request(delay_ms)

    def cancel(self, folder: Folder) -> bool:
        """Stop the folder's runs (pending or in flight); True when there was one."""
        had = False
        for runner in (folder.runner, folder.replayer):
            if runner is not None:
                had = runner.cancel() or had
        return had

    def detach(self, folder: Folder) -> None:
        """A folder leaves: its runs cancelled, its threads let go once they end."""
        self.cancel(folder)
        if folder.threads is not None:
            folder.threads.shutdown(wait=False, cancel_futures=True)

    def _job(self, folder: Folder, cancel: threading.Event, profile: bool) -> Outcome:
        loop = self.ls.event_loop

        def on_stage(stage: str, detail: str) -> None:
            loop.call_soon_threadsafe(self.on_stage, folder, stage, detail)

        def on_partial(outcome: Outcome) -> None:
            # the sampled advice, shown while the unit-throughput pass runs (pipeline.execute)
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.on_outcome(folder, outcome, partial=True)))

        return execute(folder.config, trusted=folder.trusted, cancel=cancel, cache=folder.cache,
                       stages=self.ls.stages, on_stage=on_stage, profile=profile, on_partial=on_partial,
                       worker=folder.worker)

    # ---- while a run goes on ------------------------------------------------------------
    def on_stage(self, folder: Folder, stage: str, detail: str) -> None:
        ls = self.ls
        if not ls.is_open(folder):
            return
        ls.status(folder, stage, f"{stage} {detail}".strip())
        token = self.progress_tokens.get(folder.root)
        if token is None and ls.cap("window", "work_done_progress"):
            token = f"gpa-{uuid.uuid4().hex[:8]}"
            self.progress_tokens[folder.root] = token
            asyncio.ensure_future(self._begin_progress(folder, token, stage, detail))
        elif token is not None and token in ls.work_done_progress.tokens:
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=f"{stage} {detail}".strip()))

    async def _begin_progress(self, folder: Folder, token: str, stage: str, detail: str) -> None:
        progress = self.ls.work_done_progress
        try:
            await progress.create_async(token)
        except Exception:  # noqa: BLE001 - progress is optional
            self.progress_tokens.pop(folder.root, None)
            return
        if self.progress_tokens.get(folder.root) != token:
            progress.end(token, types.WorkDoneProgressEnd())
            return
        progress.begin(token, types.WorkDoneProgressBegin(
            title="GPA", message=f"{stage} {detail}".strip(), cancellable=True))
        fut = progress.tokens.get(token)
        if fut is not None:
            fut.add_done_callback(lambda f: f.cancelled() and folder.runner and folder.runner.cancel())

    def end_progress(self, folder: Folder, message: str) -> None:
        token = self.progress_tokens.pop(folder.root, None)
        progress = self.ls.work_done_progress
        if token is not None and token in progress.tokens:
            progress.end(token, types.WorkDoneProgressEnd(message=message))

    # ---- a run's end ------------------------------------------------------------------
    async def on_outcome(self, folder: Folder, outcome: Outcome, partial: bool = False) -> None:
        """Publish a run's result; ``partial``: the sampled advice of a run still measuring unit
        throughput (its progress and status go on)."""
        ls = self.ls
        if not ls.is_open(folder):
            return
        if outcome.cancelled:
            self.end_progress(folder, "cancelled")
            ls.status(folder, "idle", "cancelled: a newer run replaced it" if folder.runner and folder.runner.running
                      else "cancelled")
            return
        if outcome.report is not None:
            analysis = await asyncio.get_running_loop().run_in_executor(ls.executor, index, folder.root, outcome)
            if not ls.is_open(folder):
                return
            folder.analysis = analysis
            for path in analysis.files:
                ls.tracker.reset(from_fs_path(str(path)))
            folder.compiler = ()
        else:
            folder.compiler = outcome.compiler
        folder.error = outcome.error
        ls.published_changed(folder)
        if partial:
            ls.status(folder, outcome.phase or "measuring", outcome.note, result=result_summary(folder))
            return
        self.end_progress(folder, "done" if outcome.error is None else outcome.error.message)
        if outcome.error is not None:
            err = outcome.error
            ls.status(folder, "error", err.message + (f" ({err.hint})" if err.hint else ""))
            ls.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message="gpa: " + diagnostics.error_text(err)[:2000]))
            return
        if not folder.trusted:
            ls.status(folder, "untrusted", trust.ENABLE_HINT, result=result_summary(folder))
            return
        if outcome.mode == "no_gpu":
            ls.tell_once(folder, "nogpu", types.MessageType.Info, "gpa: " + outcome.note)
        ls.status(folder, "idle", outcome.note or ("from an earlier run" if outcome.from_cache else "analysis done"),
                  result=result_summary(folder))
