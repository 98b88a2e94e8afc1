"""Analysis results kept on disk, so a restarted server shows them at once.

Key: the content hashes of the project's sources plus the effective
configuration. Entries live in the user's cache folder (never the
workspace; which folder: gpa_lsp/user_cache.py), as versioned JSON of the
Report (no pickle: a cache file is data, not code). ``latest`` remembers the last result of a folder even
when its sources changed since, so it can be shown marked as from an
earlier run. The applyAndMeasure history lives beside it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..analysis.model import Report, dump_report, load_report
from ..user_cache import analysis_cache_dir

log = logging.getLogger("gpa_lsp.server")
SCHEMA = 2                 # 2: Advice.hides_latency
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".cuinc")
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "build", ".gpa", "out"}


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


# ---- the store ----------------------------------------------------------------

class ResultCache:
    """A folder's results on disk. The cache only saves time: failing to read or write it (a missing,
    unwritable or corrupt cache folder) is a logged warning, and the result is still published."""

    def __init__(self, root: str | Path, home: Path | None = None) -> None:
        self.root = str(Path(root).resolve())
        self.dir = (home or analysis_cache_dir()) / hashlib.sha256(self.root.encode()).hexdigest()[:16]
        self._warned: set[str] = set()

    def _warn(self, what: str, exc: BaseException) -> None:
        if what not in self._warned:          # once per kind of failure, not on every save
            self._warned.add(what)
            log.warning("gpa-lsp cache %s: cannot %s (%s); results are not kept across restarts",
                        self.dir, what, exc)

    def _write(self, name: str, payload: Any) -> None:
        tmp = self.dir / f".{name}.{os.getpid()}.tmp"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(payload), encoding="utf-8")
            os.replace(tmp, self.dir / name)
        except OSError as exc:
            self._warn("write", exc)
            try:
                tmp.unlink()
            except OSError:
                pass

    def _read(self, name: str) -> Any:
        path = self.dir / name
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):     # nothing stored (yet, or ever: see _write)
            return None
        except (OSError, ValueError) as exc:       # ValueError: not UTF-8
            self._warn(f"read {name}", exc)
            return None
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
            self._warn(f"read {name}", exc)
            return None

    def bundle_dir(self) -> Path:
        """Where a run writes the bundle it records: the cache, or a temporary folder when the cache
        cannot be written."""
        d = self.dir / "bundles"
        try:
            d.mkdir(parents=True, exist_ok=True)
            return d
        except OSError as exc:
            self._warn("keep recorded bundles", exc)
            return Path(tempfile.mkdtemp(prefix="gpa-bundles-"))

    def store(self, key: str, report: Report, hashes: dict[str, str], note: str = "",
              mode: str = "profiled") -> None:
        """Keep a run's result; ``mode``: the run's ``pipeline.RunMode`` (read back by ``cached_outcome``)."""
        entry = {"schema": SCHEMA, "key": key, "root": self.root, "time": time.time(), "note": note,
                 "mode": mode, "hashes": hashes, "report": dump_report(report)}
        self._write(f"result-{key}.json", entry)
        self._write("latest.json", entry)

    def _load(self, entry: Any) -> tuple[Report, dict[str, Any]] | None:
        if not isinstance(entry, dict) or entry.get("schema") != SCHEMA:
            return None
        hashes = entry.get("hashes", {})
        if not isinstance(entry.get("note", ""), str) or not isinstance(hashes, dict) \
                or not all(isinstance(v, str) for v in hashes.values()):
            self._warn("read a result", ValueError("malformed note or hashes"))
            return None
        try:
            return load_report(entry["report"]), entry
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            self._warn("read a result", exc)
            return None

    def lookup(self, key: str) -> tuple[Report, dict[str, Any]] | None:
        return self._load(self._read(f"result-{key}.json"))

    def latest(self) -> tuple[Report, dict[str, Any]] | None:
        return self._load(self._read("latest.json"))

    def history(self) -> list[dict[str, Any]]:
        data = self._read("history.json")
        # the report formats "estimated" as a number: keep only items it can show
        return [h for h in data if isinstance(h, dict) and type(h.get("estimated", 0)) in (int, float)] \
            if isinstance(data, list) else []

    def add_history(self, item: dict[str, Any]) -> None:
        items = self.history()
        items.append({"time": time.time(), **item})
        self._write("history.json", items[-200:])

