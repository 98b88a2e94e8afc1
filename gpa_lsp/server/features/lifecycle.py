"""The server's life: ``initialize`` (the workspace folders), ``initialized`` (settings, watchers,
each folder started), ``shutdown`` (runs cancelled) and ``exit``.

``terminate`` is how the ``gpa-lsp`` process leaves, on ``exit``, stdin EOF, SIGTERM and SIGHUP:
every process the server started is killed and the process ends without waiting for its threads.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types

from ... import procs
from ..config_merge import plain
from ..folder import uri_path


def workspace_roots(params: types.InitializeParams) -> list[Path]:
    """The folders of ``initialize``: ``workspaceFolders``, else ``rootUri``, else ``rootPath``."""
    roots = [uri_path(f.uri) for f in (params.workspace_folders or [])]
    if not roots and params.root_uri:
        roots = [uri_path(params.root_uri)]
    elif not roots and params.root_path:
        roots = [Path(params.root_path).resolve()]
    return roots


def register(ls) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(ls, params: types.InitializeParams) -> None:
        opts = plain(params.initialization_options)
        ls.init_options = dict(opts) if isinstance(opts, dict) else {}
        for r in workspace_roots(params):
            ls.add_folder(r)

    @ls.feature(types.INITIALIZED)
    async def initialized(ls, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        if ls.cap("workspace", "did_change_configuration", "dynamic_registration"):
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(id="gpa-config", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                       register_options=types.DidChangeConfigurationRegistrationOptions(section="gpa"))]))
            except Exception:  # noqa: BLE001 - not fatal: settings are still read at start
                pass
        ls.start_watching()
        await asyncio.gather(*(ls.start_folder(f) for f in list(ls.folders.values())))

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls, params: Any = None) -> None:
        for folder in ls.folders.values():
            if folder.runner is not None:
                folder.runner.cancel()
        ls.stop_watching()
        for folder in ls.folders.values():
            if folder.worker is not None:
                folder.worker.stop()

    @ls.feature(types.EXIT)
    def on_exit(ls, params: Any = None) -> None:
        # the `gpa-lsp` process leaves at once: pygls would wait for its stdin reader, which returns
        # only when the editor closes the pipe, and the interpreter for the run threads; a server
        # driven in-process (tests) is left to its owner
        if ls.owns_process:
            terminate(ls, 0 if getattr(ls.protocol, "_shutdown", False) else 1)


def terminate(ls, code: int) -> None:
    """Leave now: kill every process the server started and exit, without waiting for the worker
    threads. Runs on stdin EOF, `exit`, SIGTERM and SIGHUP. Why not a normal exit: the interpreter
    joins the run threads first, and a run waits for its harness (up to its timeout) or nvdisasm."""
    for folder in list(ls.folders.values()):
        ls.runs.cancel(folder)
    # the runs' runners (which take their harnesses' setsid children along), the analysis worker,
    # nvdisasm: all descendants of this process
    procs.kill_tree(os.getpid())
    logging.shutdown()
    os._exit(code)
