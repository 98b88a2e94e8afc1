"""How this gpa-lsp was installed, to write install hints that are true (gpa-lsp is not on PyPI)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from . import __version__


def source_tree() -> Path | None:
    """The repository this package runs from (an editable or in-place install), else None."""
    root = Path(__file__).resolve().parents[1]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "gpa-lsp"' in text else None


def pip_extra(extra: str | None = None) -> str:
    """The command that installs gpa-lsp (with ``extra``) into this Python."""
    py = shlex.quote(sys.executable or "python3")
    tail = f"[{extra}]" if extra else ""
    root = source_tree()
    if root is not None:
        return f"{py} -m pip install -e {shlex.quote(f'{root}{tail}')}"
    return (f"{py} -m pip install '/path/to/gpa-lsp{tail}' (the repository, or the wheel "
            f"`python3 -m pip wheel --no-deps /path/to/gpa-lsp` builds: 'gpa_lsp-{__version__}-py3-none-any.whl{tail}')")
