"""Changes on disk that the editor did not make (git checkout, another editor, a new bundle): watchdog."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from .cache import is_source

log = logging.getLogger("gpa_lsp.server")


def watch_folders(server, roots: list[Path], loop: asyncio.AbstractEventLoop):
    """Start a watchdog observer on ``roots``; relevant changes reach ``server.on_disk_change`` on ``loop``."""
    try:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:  # pragma: no cover - watchdog is a dependency
        return None

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):  # noqa: D401 - watchdog API
            if event.event_type not in ("modified", "created", "deleted", "moved"):
                return
            for p in (getattr(event, "src_path", None), getattr(event, "dest_path", None)):
                if p and not getattr(event, "is_directory", False):
                    name = Path(str(p)).name
                    if is_source(str(p)) or name in ("gpa.toml", "pyproject.toml") or name.endswith(".gpabundle"):
                        loop.call_soon_threadsafe(server.on_disk_change, Path(str(p)))

    observer = Observer()
    for root in roots:
        try:
            observer.schedule(Handler(), str(root), recursive=True)
        except OSError as exc:
            log.warning("cannot watch %s: %s", root, exc)
    observer.daemon = True
    observer.start()
    return observer
