"""The user's cache folder of gpa-lsp, one rule for all it keeps across projects: ``$GPA_CACHE_DIR``,
else ``$XDG_CACHE_HOME``, else ``~/.cache``, then ``gpa-lsp``. It holds the collector's built CUPTI
injection library (``cupti/``) and the driver check that passed (profile/gpu_check.py), and the
language server's analysis results, one folder per project (server/cache.py).

``GPA_LSP_CACHE`` is an older name kept for the analysis results alone: when set it is their folder
itself (no ``gpa-lsp`` appended), and the collector's part stays where the rule puts it. The server
tests and the editor benchmarks set it to keep each run's results apart without building the
injection library again."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    base = os.environ.get("GPA_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpa-lsp"


def collector_cache_dir() -> Path:
    """The collector's part: the built injection library, the driver check that passed."""
    return user_cache_dir()


def analysis_cache_dir() -> Path:
    """The language server's analysis results: ``$GPA_LSP_CACHE`` when set, else the user's cache folder."""
    return Path(os.environ["GPA_LSP_CACHE"]) if os.environ.get("GPA_LSP_CACHE") else user_cache_dir()
