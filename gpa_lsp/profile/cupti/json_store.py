"""The small JSON files the collector keeps between runs in a project's ``.gpa/`` (the sample volume
of each harness, the unit throughput of each measured launch): one object of entries, read
forgivingly, written atomically and best effort, the oldest entries dropped beyond a bound.

Why best effort: these files only save time on the next run; a read-only or damaged ``.gpa/`` must
never fail a profile, so a file that cannot be read is an empty store and one that cannot be
written is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_entries(path: Path) -> dict:
    """The file's entries; {} when it is missing, unreadable, not JSON or not an object."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_entries(path: Path, doc: dict, max_entries: int) -> None:
    """Write ``doc`` to ``path`` (through a temporary file and a rename), first dropping its oldest
    entries (dicts keep insertion order) beyond ``max_entries``; an OSError leaves the file as it was."""
    while len(doc) > max_entries:
        doc.pop(next(iter(doc)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass
