"""Changes on disk that the editor did not make (git checkout, another editor, a new bundle): watchdog.

One observer per workspace folder, so that removing a folder stops exactly
its watcher. A change reaches the server only through the folder that owns
the file (the innermost one): with nested folders the outer observer sees
the inner folder's files too, and would otherwise report them twice.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from .cache import is_source

log = logging.getLogger("gpa_lsp.server")
WATCHED_NAMES = ("gpa.toml", "pyproject.toml")


def relevant(path: str) -> bool:
    """A file whose change can alter what the server shows: a source, the project file, a bundle."""
    name = Path(path).name
    return is_source(path) or name in WATCHED_NAMES or name.endswith(".gpabundle")


def watch_folder(server: Any, folder: Any, loop: asyncio.AbstractEventLoop):
    """Start a watchdog observer on ``folder.root``; relevant changes reach
    ``server.on_disk_change(path, folder)`` on ``loop``. None when the folder cannot be watched."""
    try:  # deferred: without watchdog the folder is simply not watched
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:  # pragma: no cover - watchdog is a dependency
        return None

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):  # noqa: D401 - watchdog API
            if event.event_type not in ("modified", "created", "deleted", "moved") or event.is_directory:
                return
            for p in (getattr(event, "src_path", None), getattr(event, "dest_path", None)):
                if p and relevant(str(p)):
                    loop.call_soon_threadsafe(server.on_disk_change, Path(str(p)), folder)

    observer = Observer()
    try:
        observer.schedule(Handler(), str(folder.root), recursive=True)
    except OSError as exc:
        log.warning("cannot watch %s: %s", folder.root, exc)
        return None
    observer.daemon = True
    observer.start()
    return observer


def stop_watching(observer: Any) -> None:
    """Stop an observer from :func:`watch_folder` (None: nothing to stop) without waiting on its thread long."""
    if observer is None:
        return
    observer.stop()
    observer.join(timeout=2)
