"""The gpa-lsp language server: LSP wiring only.

Handlers find the workspace folder of a document and hand plain data to the
feature modules (diagnostics, hover, lenses, actions, report); runs go
through ``pipeline.Runner`` (off the event loop). ``main()`` is the
``gpa-lsp`` entry point: stdio by default, ``--tcp HOST:PORT`` to debug.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__, procs
from . import diagnostics, handlers, trust
from .cache import ResultCache
from .config_merge import config_file_of, effective_config, plain
from .folder import Folder
from .pipeline import Outcome, Runner, Stages, cached_outcome, execute
from .results import index
from .publishing import PublishingMixin
from .tracking import Tracker
from .watch import stop_watching as stop_observer, watch_folder

log = logging.getLogger("gpa_lsp.server")
COMMANDS = ("gpa.profile", "gpa.report", "gpa.cancel", "gpa.applyAndMeasure")
NOT_CONFIGURED = ("this folder has no gpa.toml (or [tool.gpa]): add one with [build] sources and "
                  "[harness] command to profile on save; see the gpa.toml example in the docs")


class GpaLanguageServer(PublishingMixin, LanguageServer):
    def __init__(self, stages: Stages | None = None) -> None:
        super().__init__("gpa-lsp", __version__)
        self.folders: dict[Path, Folder] = {}
        self.init_options: dict[str, Any] = {}
        self.tracker = Tracker()
        self.stages = stages or Stages()
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gpa-run")
        self.progress_tokens: dict[Path, str] = {}
        self._line_cache: dict[Path, list[str]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.owns_process = False        # True when run by main(): exit ends the process (terminate)

    # ---- helpers --------------------------------------------------------------
    def notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)

    def cap(self, *path: str) -> Any:
        node: Any = self.client_capabilities
        for p in path:
            node = getattr(node, p, None) if node is not None else None
        return node

    def folder_of(self, uri_or_path: str | Path | None) -> Folder | None:
        """The innermost workspace folder holding a file (None: outside them all; no argument: the first)."""
        if uri_or_path is None:
            return next(iter(self.folders.values()), None)
        s = str(uri_or_path)
        path = Path(to_fs_path(s) if s.startswith("file:") else s).resolve()
        best = None
        for root, f in self.folders.items():
            if f.contains(path) and (best is None or len(str(root)) > len(str(best.root))):
                best = f
        return best

    def owns(self, folder: Folder, path: Path) -> bool:
        """Whether ``folder`` publishes for ``path``: the innermost folder holding it, or any folder for a
        file outside them all (a bundle may name one). Two folders never publish for one URI."""
        owner = self.folder_of(path)
        return owner is folder or owner is None

    def is_open(self, folder: Folder) -> bool:
        """Still one of the workspace's folders (a run or a settings request may end after its removal)."""
        return self.folders.get(folder.root) is folder

    def lines_of(self, path: Path) -> list[str]:
        """The current text of a file, by line: the open document when there is one, else the disk."""
        uri = from_fs_path(str(path))
        doc = self.workspace.text_documents.get(uri) if uri else None
        if doc is not None:
            return doc.source.splitlines()
        try:
            return path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def status(self, folder: Folder, state: str, message: str, result: str | None = None) -> None:
        folder.state = state
        if not self.is_open(folder):
            return
        from_cache = bool(folder.analysis and folder.analysis.outcome.from_cache)
        self.notify("gpa/status", {"state": state, "message": message, "root": folder.uri,
                                   "result": result, "fromCache": from_cache})

    def tell_once(self, folder: Folder, key: str, kind: types.MessageType, text: str) -> None:
        if key in folder.told:
            return
        folder.told.add(key)
        self.window_show_message(types.ShowMessageParams(type=kind, message=text))

    # ---- folders and configuration ---------------------------------------------------
    async def fetch_settings(self, folder: Folder) -> None:
        if not self.cap("workspace", "configuration"):
            return
        try:
            res = await asyncio.wait_for(self.workspace_configuration_async(types.ConfigurationParams(items=[
                types.ConfigurationItem(scope_uri=folder.uri, section="gpa"),
                types.ConfigurationItem(section="gpa")])), 10)
        except Exception as exc:  # noqa: BLE001 - a client that cannot answer keeps the defaults
            log.warning("workspace/configuration failed: %r", exc)
            return
        scoped, user = (list(plain(res) or []) + [None, None])[:2]
        folder.editor_settings = dict(scoped) if isinstance(scoped, dict) else {}
        folder.user_settings = dict(user) if isinstance(user, dict) else {}

    def recompute_config(self, folder: Folder) -> None:
        folder.eff = effective_config(folder.root, self.init_options.get("settings") or None, folder.editor_settings)
        folder.trusted = trust.is_trusted(folder.root, self.init_options, folder.user_settings)
        if folder.eff.settings_error:
            self.tell_once(folder, "settings:" + folder.eff.settings_error.message, types.MessageType.Warning,
                           "gpa: " + diagnostics.error_text(folder.eff.settings_error))

    def add_folder(self, path: Path) -> Folder:
        path = path.resolve()
        eff = effective_config(path, self.init_options.get("settings") or None, {})
        folder = Folder(root=path, uri=from_fs_path(str(path)), eff=eff, cache=ResultCache(path))
        folder.runner = Runner(lambda cancel, f=folder: self._job(f, cancel, True),
                               lambda outcome, f=folder: self.on_outcome(f, outcome), self.executor)
        self.folders[path] = folder
        return folder

    async def open_folder(self, path: Path) -> None:
        """A folder added to the running workspace (workspace/didChangeWorkspaceFolders): watch and start it."""
        path = path.resolve()
        if path in self.folders:
            return
        folder = self.add_folder(path)
        self._hand_over(folder)
        self.watch(folder)
        await self.start_folder(folder)

    def remove_folder(self, path: Path) -> None:
        """A folder removed from the workspace: stop its runs and watcher, clear what it published."""
        folder = self.folders.pop(path.resolve(), None)
        if folder is None:
            return
        stop_observer(folder.observer)
        folder.observer = None
        for runner in (folder.runner, folder.replayer):
            if runner is not None:
                runner.cancel()
        self._end_progress(folder, "folder removed")
        for uri in folder.published:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        for uri in folder.heat_uris:
            self.notify("gpa/lineHeat", {"uri": uri, "lines": []})
        folder.published, folder.heat_uris = set(), set()
        self._hand_over(folder)

    def _hand_over(self, folder: Folder) -> None:
        """Re-publish the folders enclosing ``folder``: the files it holds change owner when it comes or goes."""
        for other in list(self.folders.values()):
            if other is not folder and other.ready and other.contains(folder.root):
                self.publish(other)
                self.publish_line_heat(other)

    async def start_folder(self, folder: Folder) -> None:
        await self.fetch_settings(folder)
        if not self.is_open(folder):
            return
        self.recompute_config(folder)
        folder.ready = True
        self.publish(folder)
        if folder.pending:
            why, folder.pending = folder.pending, None
            self.request_run(folder, why=why)
            if folder.trusted:
                return
        if not folder.trusted:
            self.status(folder, "untrusted", trust.ENABLE_HINT)
            self.tell_once(folder, "untrusted", types.MessageType.Info, "gpa: " + trust.ENABLE_HINT)
        elif folder.eff.error is None:
            self.status(folder, "idle", "ready: saving a CUDA source builds, profiles and analyses it"
                        if folder.config.server.run_on_save else "ready: run GPA: Profile now")
        else:
            self.status(folder, "error", folder.eff.error.message)
        loop = asyncio.get_running_loop()
        cached = await loop.run_in_executor(self.executor, cached_outcome, folder.config, folder.cache)
        if not self.is_open(folder):
            return
        if cached is not None and not cached.stale:
            await self.on_outcome(folder, cached)
            return
        if cached is not None:
            await self.on_outcome(folder, cached)
        if folder.config.bundle_path:
            # show the recorded results now; profiling waits for a save or "Profile now"
            self.replay(folder)

    def _replays(self, folder: Folder) -> bool:
        """Whether a run of this folder would only replay its recorded bundle."""
        return (not folder.trusted or folder.config.profile.collector == "replay"
                or not self.stages.has_gpu() or folder.analysis is None)

    def replay(self, folder: Folder, delay_ms: int = 0) -> None:
        """Analyse the configured bundle (no build, no harness), whatever the trust."""
        if folder.replayer is None:
            folder.replayer = Runner(lambda cancel: self._job(folder, cancel, False),
                                     lambda outcome: self.on_outcome(folder, outcome), self.executor)
        folder.replayer.request(delay_ms)

    def _job(self, folder: Folder, cancel: threading.Event, profile: bool) -> Outcome:
        loop = self._loop

        def on_stage(stage: str, detail: str) -> None:
            loop.call_soon_threadsafe(self.on_stage, folder, stage, detail)

        def on_partial(outcome: Outcome) -> None:
            # the sampled advice, shown while the unit-throughput pass runs (pipeline.execute)
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.on_outcome(folder, outcome, partial=True)))

        return execute(folder.config, trusted=folder.trusted, cancel=cancel, cache=folder.cache,
                       stages=self.stages, on_stage=on_stage, profile=profile, on_partial=on_partial)

    # ---- runs -----------------------------------------------------------------------
    def request_run(self, folder: Folder, delay_ms: int | None = None, why: str = "save") -> None:
        if not folder.ready:
            folder.pending = why        # settings (and so trust) are not known yet: run once they are
            return
        if not folder.trusted and why != "command":
            self.status(folder, "untrusted", trust.ENABLE_HINT)
            self.tell_once(folder, "untrusted", types.MessageType.Info, "gpa: " + trust.ENABLE_HINT)
            return
        if why != "command" and not self.configured(folder):
            # any CUDA folder opened in the editor: do not try (and fail) to profile it on every save
            self.status(folder, "idle", NOT_CONFIGURED)
            self.tell_once(folder, "unconfigured", types.MessageType.Info, "gpa: " + NOT_CONFIGURED)
            return
        assert folder.runner is not None
        if folder.replayer is not None:
            folder.replayer.cancel()      # a fresh run supersedes showing the recorded bundle
        folder.runner.request(folder.config.server.debounce_ms if delay_ms is None else delay_ms)

    @staticmethod
    def configured(folder: Folder) -> bool:
        """A project file, or editor settings that say what to build or run."""
        c = folder.config
        return bool(config_file_of(folder.root) or c.harness.command or c.build.sources or c.build.command
                    or c.profile.collector == "replay")

    def on_stage(self, folder: Folder, stage: str, detail: str) -> None:
        if not self.is_open(folder):
            return
        self.status(folder, stage, f"{stage} {detail}".strip())
        token = self.progress_tokens.get(folder.root)
        if token is None and self.cap("window", "work_done_progress"):
            token = f"gpa-{uuid.uuid4().hex[:8]}"
            self.progress_tokens[folder.root] = token
            asyncio.ensure_future(self._begin_progress(folder, token, stage, detail))
        elif token is not None and token in self.work_done_progress.tokens:
            self.work_done_progress.report(token, types.WorkDoneProgressReport(message=f"{stage} {detail}".strip()))

    async def _begin_progress(self, folder: Folder, token: str, stage: str, detail: str) -> None:
        try:
            await self.work_done_progress.create_async(token)
        except Exception:  # noqa: BLE001 - progress is optional
            self.progress_tokens.pop(folder.root, None)
            return
        if self.progress_tokens.get(folder.root) != token:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd())
            return
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="GPA", message=f"{stage} {detail}".strip(), cancellable=True))
        fut = self.work_done_progress.tokens.get(token)
        if fut is not None:
            fut.add_done_callback(lambda f: f.cancelled() and folder.runner and folder.runner.cancel())

    def _end_progress(self, folder: Folder, message: str) -> None:
        token = self.progress_tokens.pop(folder.root, None)
        if token is not None and token in self.work_done_progress.tokens:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    async def on_outcome(self, folder: Folder, outcome: Outcome, partial: bool = False) -> None:
        """Publish a run's result; ``partial``: the sampled advice of a run still measuring unit
        throughput (its progress and status go on)."""
        if not self.is_open(folder):
            return
        if outcome.cancelled:
            self._end_progress(folder, "cancelled")
            self.status(folder, "idle", "cancelled: a newer run replaced it" if folder.runner and folder.runner.running
                        else "cancelled")
            return
        if outcome.report is not None:
            analysis = await asyncio.get_running_loop().run_in_executor(self.executor, index, folder.root, outcome)
            if not self.is_open(folder):
                return
            folder.analysis = analysis
            for path in analysis.files:
                self.tracker.reset(from_fs_path(str(path)))
            folder.compiler = ()
        else:
            folder.compiler = outcome.compiler
        folder.error = outcome.error
        self._line_cache.clear()
        self.publish(folder)
        self.publish_line_heat(folder)
        if self.cap("workspace", "code_lens", "refresh_support"):
            try:
                self.workspace_code_lens_refresh(None)
            except Exception:  # noqa: BLE001
                pass
        if partial:
            self.status(folder, outcome.phase or "measuring", outcome.note, result=self.result_summary(folder))
            return
        self._end_progress(folder, "done" if outcome.error is None else outcome.error.message)
        if outcome.error is not None:
            err = outcome.error
            self.status(folder, "error", err.message + (f" ({err.hint})" if err.hint else ""))
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message="gpa: " + diagnostics.error_text(err)[:2000]))
            return
        if not folder.trusted:
            self.status(folder, "untrusted", trust.ENABLE_HINT, result=self.result_summary(folder))
            return
        if outcome.note and "no GPU" in outcome.note:
            self.tell_once(folder, "nogpu", types.MessageType.Info, "gpa: " + outcome.note)
        self.status(folder, "idle", outcome.note or ("from an earlier run" if outcome.from_cache else "analysis done"),
                    result=self.result_summary(folder))

    def result_summary(self, folder: Folder) -> str | None:
        rep = folder.analysis.report if folder.analysis else None
        if rep is None or not rep.kernels:
            return None
        top = [(a.estimated_speedup, k, a) for k in rep.kernels for a in k.advice]
        if not top:
            return f"{len(rep.kernels)} kernels, no advice"
        s, k, a = max(top, key=lambda t: t[0])
        return f"{a.title} {s:.2f}x on {k.demangled or k.name}"

    # ---- watching the disk ----------------------------------------------------------------
    def start_watching(self) -> None:
        for folder in self.folders.values():
            self.watch(folder)

    def watch(self, folder: Folder) -> None:
        if folder.observer is None:
            folder.observer = watch_folder(self, folder, self._loop)

    def stop_watching(self) -> None:
        for folder in self.folders.values():
            stop_observer(folder.observer)
            folder.observer = None

    def on_disk_change(self, path: Path, via: Folder | None = None) -> None:
        """A file changed on disk; ``via``: the folder whose watcher saw it (only its own files count)."""
        folder = self.folder_of(path)
        if folder is None or (via is not None and via is not folder):
            return
        if path.name.endswith(".gpabundle"):
            bundle = folder.config.bundle_path
            if bundle and Path(bundle).resolve() == path.resolve() and path.is_file() and self._replays(folder):
                self.replay(folder)    # a newly recorded (or pulled) bundle: show it
            return
        if path.name in ("gpa.toml", "pyproject.toml") and path.parent.resolve() == folder.root:
            old = folder.config
            self.recompute_config(folder)
            self.publish(folder)
            if folder.config != old and folder.trusted and folder.config.server.run_on_save:
                self.request_run(folder)
            return
        if folder.trusted and folder.config.server.run_on_save:
            self.request_run(folder)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop (captured in ``initialized``), for calls from worker threads."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return self.loop


def _register(ls: GpaLanguageServer) -> None:
    handlers.register(ls)


def create_server(stages: Stages | None = None) -> GpaLanguageServer:
    ls = GpaLanguageServer(stages)
    _register(ls)
    return ls


def tcp_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, host 127.0.0.1) -> (host, port); ValueError with the reason otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT with a port in 1-65535 (e.g. 127.0.0.1:2087)")
    return host.strip("[]") or "127.0.0.1", int(port)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpa-lsp", description="gpa-lsp language server (stdio by default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (for debugging)")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    level = getattr(logging, args.log_level.upper(), None)
    if not isinstance(level, int):
        parser.error(f"--log-level {args.log_level!r}: use DEBUG, INFO, WARNING or ERROR")
    address = None
    if args.tcp:
        try:
            address = tcp_address(args.tcp)
        except ValueError as exc:
            parser.error(f"--tcp {exc}")
    logging.basicConfig(level=level)
    ls = create_server()
    ls.owns_process = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: terminate(ls, 128 + signum))
    if address is None:
        ls.start_io()                # returns on stdin EOF, `exit`, or Ctrl-C
        terminate(ls, 0)
    try:
        ls.start_tcp(*address)
    except OSError as exc:           # unknown host, port in use, not allowed
        print(f"gpa-lsp: error: cannot listen on {address[0]}:{address[1]}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    terminate(ls, 0)
    return 0


def terminate(ls: GpaLanguageServer, code: int) -> None:
    """Leave now: kill every process the server started and exit, without waiting for the worker
    threads. Runs on stdin EOF, `exit`, SIGTERM and SIGHUP. Why not a normal exit: the interpreter
    joins the run threads first, and a run waits for its harness (up to its timeout) or nvdisasm."""
    for folder in list(ls.folders.values()):
        for runner in (folder.runner, folder.replayer):
            if runner is not None:
                runner.cancel()
    # the runs' runners (which take their harnesses' setsid children along), the analysis worker,
    # nvdisasm: all descendants of this process
    procs.kill_tree(os.getpid())
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
