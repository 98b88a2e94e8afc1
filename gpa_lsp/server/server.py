"""The gpa-lsp language server: LSP wiring only.

Handlers find the workspace folder of a document and hand plain data to the
feature modules (diagnostics, hover, lenses, actions, report); runs go
through :mod:`runs` (the run state machine; the work itself off the event loop). ``main()`` is the
``gpa-lsp`` entry point: stdio by default, ``--tcp HOST:PORT`` to debug.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from . import features, protocol, trust, worker
from .features import diagnostics, doctor
from .features.lifecycle import terminate
from .cache import ResultCache
from .config_merge import effective_config, plain
from .folder import Folder, uri_path
from .pipeline import Stages, cached_outcome
from .protocol import RunState
from .publishing import PublishingMixin
from .results import FileView
from .runs import Runs
from .tracking import Tracker
from .watch import stop_watching as stop_observer, watch_folder

log = logging.getLogger("gpa_lsp.server")


class GpaLanguageServer(PublishingMixin, LanguageServer):
    def __init__(self, stages: Stages | None = None) -> None:
        super().__init__("gpa-lsp", __version__)
        self.folders: dict[Path, Folder] = {}
        self.init_options: dict[str, Any] = {}
        self.tracker = Tracker()
        self.stages = stages or Stages()
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gpa-server")   # short jobs; runs: runs.py
        self.runs = Runs(self)
        self.doctor: asyncio.Future | None = None     # gpa doctor's checks, run once (features/doctor.py)
        self._line_cache: dict[Path, list[str]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.owns_process = False        # True when run by main(): exit ends the process (terminate)

    # ---- helpers --------------------------------------------------------------
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

    def view_of(self, uri: str) -> tuple[Folder, Path, FileView] | None:
        """The folder, path and analysis view of a document, when its folder has an analysis of it."""
        folder = self.folder_of(uri)
        if folder is None or folder.analysis is None:
            return None
        path = uri_path(uri)
        view = folder.analysis.view(path)
        return None if view is None else (folder, path, view)

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

    def status(self, folder: Folder, state: RunState, message: str, result: str | None = None) -> None:
        folder.state = state
        if not self.is_open(folder):
            return
        from_cache = bool(folder.analysis and folder.analysis.outcome.from_cache)
        protocol.send(self.protocol, protocol.Status(state, message, folder.uri, result, from_cache))

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
        self.runs.attach(folder)
        self.folders[path] = folder
        if not worker.in_process():
            folder.worker = worker.AnalysisWorker(path.name)
            if folder.configured or folder.config.bundle_path:
                folder.worker.start()      # it imports the analysis now, not at the first save
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
        self.runs.detach(folder)
        self.runs.end_progress(folder, "folder removed")
        if folder.worker is not None:
            folder.worker.stop()
        for uri in folder.published:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        for uri in folder.heat_uris:
            protocol.send(self.protocol, protocol.LineHeat(uri))
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
        asyncio.ensure_future(doctor.tell_folder(self, folder))    # what this machine lacks for it, if anything
        if folder.pending:
            why, folder.pending = folder.pending, None
            self.runs.request(folder, why=why)
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
            await self.runs.on_outcome(folder, cached)
            return
        if cached is not None:
            await self.runs.on_outcome(folder, cached)
        if folder.config.bundle_path:
            # show the recorded results now; profiling waits for a save or "Profile now"
            self.runs.replay(folder)

    def published_changed(self, folder: Folder) -> None:
        """The folder's analysis, compiler messages or error changed: publish it all again."""
        self._line_cache.clear()
        self.publish(folder)
        self.publish_line_heat(folder)
        if self.cap("workspace", "code_lens", "refresh_support"):
            try:
                self.workspace_code_lens_refresh(None)
            except Exception:  # noqa: BLE001
                pass

    # ---- watching the disk ----------------------------------------------------------------
    def start_watching(self) -> None:
        for folder in self.folders.values():
            self.watch(folder)

    def watch(self, folder: Folder) -> None:
        if folder.observer is None:
            folder.observer = watch_folder(self, folder, self.event_loop)

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
            if bundle and Path(bundle).resolve() == path.resolve() and path.is_file() and self.runs.replays(folder):
                self.runs.replay(folder)    # a newly recorded (or pulled) bundle: show it
            return
        if path.name in ("gpa.toml", "pyproject.toml") and path.parent.resolve() == folder.root:
            old = folder.config
            self.recompute_config(folder)
            self.publish(folder)
            if folder.config != old:
                if folder.trusted and folder.config.server.run_on_save:
                    self.runs.request(folder)
                elif folder.config.bundle_path and self.runs.replays(folder):
                    self.runs.replay(folder)    # a config that names a recorded bundle (gpa.init): show it
            return
        if folder.trusted and folder.config.server.run_on_save:
            self.runs.request(folder)

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop (captured in ``initialized``), for calls from worker threads."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return self.loop


def create_server(stages: Stages | None = None) -> GpaLanguageServer:
    ls = GpaLanguageServer(stages)
    features.register(ls)
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
