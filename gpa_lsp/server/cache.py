"""Analysis results kept on disk, so a restarted server shows them at once.

Key: the content hashes of the project's sources plus the effective
configuration. Entries live in the user's cache folder (never the
workspace), as versioned JSON of the Report (no pickle: a cache file is
data, not code). ``latest`` remembers the last result of a folder even
when its sources changed since, so it can be shown marked as from an
earlier run. The applyAndMeasure history lives beside it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import types as pytypes
import typing
from pathlib import Path
from typing import Any

from ..analysis import model as amodel

SCHEMA = 1
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".cuinc")
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "build", ".gpa", "out"}


def cache_home() -> Path:
    base = os.environ.get("GPA_LSP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpa-lsp")
    return Path(base)


def is_source(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SOURCE_SUFFIXES


def project_sources(root: str | Path, limit: int = 2000) -> list[Path]:
    """The project's CUDA sources and headers (sorted), skipping build and VCS folders."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(filenames):
            if is_source(f):
                found.append(Path(dirpath) / f)
                if len(found) >= limit:
                    return found
    return found


def content_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def source_hashes(root: str | Path) -> dict[str, str]:
    return {str(p): content_hash(p) for p in project_sources(root)}


def result_key(hashes: dict[str, str], config: Any) -> str:
    h = hashlib.sha256()
    for path in sorted(hashes):
        h.update(f"{path}\0{hashes[path]}\n".encode())
    h.update(repr(config).encode())
    return h.hexdigest()[:32]


# ---- Report <-> JSON -------------------------------------------------------

def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, pytypes.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(args[0], value) if len(args) == 1 else value
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            key = {"def_": "def"}.get(f.name, f.name)
            if key in value:
                kwargs[f.name] = _decode(hints[f.name], value[key])
        return tp(**kwargs)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in value)
        return tuple(_decode(a, v) for a, v in zip(args, value))
    return value


def report_from_json(data: dict[str, Any]) -> amodel.Report:
    return _decode(amodel.Report, data)


# ---- the store ----------------------------------------------------------------

class ResultCache:
    def __init__(self, root: str | Path, home: Path | None = None) -> None:
        self.root = str(Path(root).resolve())
        self.dir = (home or cache_home()) / hashlib.sha256(self.root.encode()).hexdigest()[:16]

    def _write(self, name: str, payload: Any) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        os.replace(tmp, self.dir / name)

    def _read(self, name: str) -> Any:
        try:
            return json.loads((self.dir / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def store(self, key: str, report: amodel.Report, hashes: dict[str, str], note: str = "") -> None:
        entry = {"schema": SCHEMA, "key": key, "root": self.root, "time": time.time(), "note": note,
                 "hashes": hashes, "report": amodel.to_json(report)}
        self._write(f"result-{key}.json", entry)
        self._write("latest.json", entry)

    def _load(self, entry: Any) -> tuple[amodel.Report, dict[str, Any]] | None:
        if not isinstance(entry, dict) or entry.get("schema") != SCHEMA:
            return None
        try:
            return report_from_json(entry["report"]), entry
        except (KeyError, TypeError, ValueError):
            return None

    def lookup(self, key: str) -> tuple[amodel.Report, dict[str, Any]] | None:
        return self._load(self._read(f"result-{key}.json"))

    def latest(self) -> tuple[amodel.Report, dict[str, Any]] | None:
        return self._load(self._read("latest.json"))

    def history(self) -> list[dict[str, Any]]:
        data = self._read("history.json")
        return data if isinstance(data, list) else []

    def add_history(self, item: dict[str, Any]) -> None:
        items = self.history()
        items.append({"time": time.time(), **item})
        self._write("history.json", items[-200:])

