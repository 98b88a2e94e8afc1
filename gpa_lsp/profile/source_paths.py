"""Where a source path recorded at build time (on another machine, in another checkout) lives here.

One home for the mapping: ``[paths] source_map`` prefixes, the bundle's manifest (a project that
moved), the recorded path itself, a file of the same name under the project root
(``map_source_path``); for ``gpa diff``, the local file with the recorded content
(``content_source_map``) under the bundle's project (``project_root``). The advisor, the source
reader of the fixes (analysis/sources.py), verification and the diff all map through here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from .bundle import Bundle, file_sha256


def map_source_path(path: str, source_map: Sequence[tuple[str, str]] = (), root: str | os.PathLike | None = None,
                    manifest: Mapping[str, Any] | None = None) -> str:
    """Where a source path recorded on another machine lives here.

    1. the first ``source_map`` prefix (OLD -> NEW, NEW relative to ``root``) that matches;
    2. else a manifest source with the same absolute path, looked up by its
       relative path under ``root`` (the project moved, the layout did not) --
       before the recorded path itself, so a copy of a project reads its own
       sources, not the original's that happen to exist on this machine;
    3. else the path itself if it exists;
    4. else a file under ``root`` with the same name (returned unchanged if none).
    """
    for old, new in source_map:
        old_n = old.rstrip("/")
        if path == old_n or path.startswith(old_n + "/"):
            rest = path[len(old_n):].lstrip("/")
            base = Path(new) if root is None else Path(root) / new
            return str((base / rest).resolve()) if rest else str(base.resolve())
    if root is not None:
        for src in (manifest or {}).get("sources", []):
            if src.get("abspath") == path and not Path(src["path"]).is_absolute():
                cand = Path(root) / src["path"]
                if cand.exists():
                    return str(cand.resolve())
    if Path(path).exists():
        return path
    if root is not None:
        cand = Path(root) / Path(path).name
        if cand.exists():
            return str(cand.resolve())
    return path



def project_root(bundle: str | os.PathLike) -> Path:
    """The nearest folder above a bundle holding gpa.toml (or pyproject.toml), else the bundle's folder."""
    here = Path(bundle).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "gpa.toml").is_file() or (folder / "pyproject.toml").is_file():
            return folder
    return here


def content_source_map(bundle: Bundle, root: str | os.PathLike) -> list[tuple[str, str]]:
    """``(recorded path, local file)`` for manifest sources whose usual mapping finds a file with other
    content: the local file with the recorded sha256 next to it or under ``root`` (a variant recorded
    from a copy, e.g. improved.cu built as original.cu)."""
    out = []
    cache: dict[Path, str] = {}

    def sha(p: Path) -> str:
        if p not in cache:
            try:
                cache[p] = file_sha256(p)
            except OSError:
                cache[p] = ""
        return cache[p]

    for src in bundle.sources:
        recorded, want = src.get("abspath") or src.get("path"), src.get("sha256")
        if not recorded or not want:
            continue
        mapped = Path(map_source_path(recorded, (), str(root), bundle.manifest))
        if mapped.is_file() and sha(mapped) == want:
            continue
        suffix = Path(recorded).suffix
        folders = [mapped.parent, Path(root)]
        found = None
        for folder in folders:
            if not folder.is_dir():
                continue
            for cand in sorted(folder.glob(f"*{suffix}")):
                if cand.is_file() and sha(cand) == want:
                    found = cand
                    break
            if found:
                break
        if found is not None:
            out.append((recorded, str(found.resolve())))
    return out

