"""Scratch copies of a project: where every experiment is built and run, never in the user's files.

The project folder (the config's root) is copied, without build outputs, recordings and VCS
folders, to a temporary directory; the fix's edited texts are written there; the copy's config is
the user's with its root moved and, for an nvcc build, ``-I`` for each original source folder so
that quoted includes that reach outside the project (``#include "../common/x.cuh"``) still
resolve (a quoted include is looked up beside the including file first, then in ``-I`` folders).
Copies are bounded (files, bytes) so a huge workspace fails with a message instead of filling
the disk.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import GpaError

SKIP_DIRS = {".git", ".hg", ".svn", "build", "recorded", ".gpa", "node_modules", "__pycache__", ".venv", "venv"}
MAX_FILES = 5000
MAX_BYTES = 256 * 1024 * 1024
MAX_FILE_BYTES = 64 * 1024 * 1024


class ScratchError(GpaError):
    pass


@dataclass
class Scratch:
    root: Path              # the copy of config.root
    config: Config          # the config rooted in the copy
    home: Path              # the temporary folder holding it (removed by cleanup)

    def path_of(self, original: str | os.PathLike, original_root: str) -> Path:
        return self.root / Path(original).resolve().relative_to(Path(original_root).resolve())

    def cleanup(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


def _copy_tree(src: Path, dst: Path) -> None:
    files = 0
    total = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".gpa")]
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            size = p.stat().st_size
            if size > MAX_FILE_BYTES or name.endswith((".gpabundle", ".ncu-rep", ".o", ".a", ".so", ".cubin")):
                continue
            files += 1
            total += size
            if files > MAX_FILES or total > MAX_BYTES:
                raise ScratchError(f"the project folder {src} is too large to copy for an experiment "
                                   f"(over {MAX_FILES} files or {MAX_BYTES >> 20} MB)",
                                   "verify from a folder that holds the CUDA sources and harness only")
            shutil.copy2(p, dst / rel / name)


def make(config: Config, texts: dict[str, str], *, extra_flags: tuple[str, ...] = (),
         base: str | os.PathLike | None = None) -> Scratch:
    """A copy of the project with ``texts`` (absolute original path -> new text) written into it."""
    root = Path(config.root).resolve()
    home = Path(tempfile.mkdtemp(prefix="gpa-verify-", dir=base))
    copy = home / root.name
    try:
        _copy_tree(root, copy)
        for path, text in texts.items():
            p = Path(path).resolve()
            try:
                rel = p.relative_to(root)
            except ValueError:
                raise ScratchError(f"{p} is outside the project folder {root}: an experiment cannot edit it",
                                   "keep the kernel sources under the folder of gpa.toml") from None
            target = copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        b = config.build
        includes: list[str] = []
        for s in b.sources:
            d = str(Path(config.resolve(s)).parent)
            if f"-I{d}" not in includes:
                includes.append(f"-I{d}")
        flags = tuple(b.nvcc_flags) + tuple(f for f in extra_flags if f not in b.nvcc_flags)
        if b.command is None:
            flags += tuple(includes)
        build = dataclasses.replace(b, nvcc_flags=flags)
        cfg = dataclasses.replace(config, root=str(copy), build=build, path=None)
        return Scratch(root=copy, config=cfg, home=home)
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise
