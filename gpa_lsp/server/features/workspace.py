"""The workspace: its folders, their settings, files saved or changed on disk.

``workspace/didChangeConfiguration`` re-reads every folder's settings,
``workspace/didChangeWorkspaceFolders`` starts and stops folders,
``workspace/didChangeWatchedFiles`` and ``textDocument/didSave`` may start a
run (``runs.py``). The server holds the folders; this module only wires.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from ..cache import is_source
from ..folder import uri_path
from .doctor import tell_folder

CONFIG_FILES = ("gpa.toml", "pyproject.toml")


def save_action(path: Path, run_on_save: bool) -> str | None:
    """What saving ``path`` does: ``"config"`` (re-read the project file), ``"run"`` or None."""
    if path.name in CONFIG_FILES:
        return "config"
    if is_source(path) and run_on_save:
        return "run"
    return None


def register(ls) -> None:
    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls, params: types.DidChangeConfigurationParams) -> None:
        for folder in list(ls.folders.values()):
            old = folder.config
            await ls.fetch_settings(folder)
            if not ls.is_open(folder):
                continue            # removed from the workspace meanwhile
            ls.recompute_config(folder)
            ls.publish(folder)
            asyncio.ensure_future(tell_folder(ls, folder))   # trust or the collector may change its needs
            if folder.analysis is None and folder.config.bundle_path and old.bundle_path != folder.config.bundle_path:
                await ls.start_folder(folder)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(ls, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed or ():
            ls.remove_folder(uri_path(f.uri))
        await asyncio.gather(*(ls.open_folder(uri_path(f.uri)) for f in params.event.added or ()))

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls, params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            ls.on_disk_change(uri_path(change.uri))   # the editor's file watcher; watchdog may see it too

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_path(params.text_document.uri)
        folder = ls.folder_of(path)
        if folder is None:
            return
        action = save_action(path, folder.config.server.run_on_save)
        if action == "config":
            ls.on_disk_change(path)
        elif action == "run":
            ls.runs.request(folder)
