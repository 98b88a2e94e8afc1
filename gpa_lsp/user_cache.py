"""Where the collector keeps what it reuses across projects (the built CUPTI injection library, the
driver check that passed): ``$GPA_CACHE_DIR``, else ``$XDG_CACHE_HOME``, else ``~/.cache``, then
``gpa-lsp``. (The editor's analysis cache, server/cache.py, has its own override, GPA_LSP_CACHE.)"""

from __future__ import annotations

import os
from pathlib import Path


def collector_cache_dir() -> Path:
    base = os.environ.get("GPA_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpa-lsp"
