"""A Fix as text for people (a sentence, worded in gpa_lsp.fixes beside its title) and as plain edits for
tools (SARIF ``fixes``).

The edits are the language server's quick fix, planned by the same code
(``gpa_lsp.fixes.plan_fix``; the build-flag fix edits gpa.toml with
``gpa_lsp.fixes.fast_math_edits``), and offered only when well formed on
the current source. The sentence quotes what those edits change where they can
be built, and is written from the Fix's params otherwise.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from .. import fixes
from ..fixes import PlainEdit
from ..config import BuildConfig
from .model import Fix
from .sources import LineReader, source_line


def _params(fix: Fix) -> dict[str, Any]:
    return fix.params or {}


def _fix_json(fix: Fix) -> dict[str, Any]:
    return {"kind": fix.kind, "file": fix.file, "line": fix.line, "params": dict(_params(fix))}


# ---- edits -----------------------------------------------------------------------------------

def fix_edits(fix: Fix, reader: LineReader, *, config_file: str | None = None,
              default_flags: Sequence[str] | None = None) -> tuple[str, list[PlainEdit]] | None:
    """``(title, edits)`` of the quick fix for ``fix`` (``gpa_lsp.fixes.plan_fix``), or None when its
    edit would not be well formed.

    ``config_file``: the project's gpa.toml / pyproject.toml, for fixes that change the build
    (``fast_math``); without it those give None. A missing config file is created by the edit.
    """
    if fix.kind == "fast_math":
        return _config_edits(fix, config_file, default_flags)

    def read(path: str) -> str | None:
        lines = reader(path)
        return None if lines is None else "\n".join(lines) + "\n"

    plan = fixes.plan_fix(fix, read)
    if plan is None or not plan.edits:
        return None
    return plan.title, _plain(plan.edits, fix.file or "")


def _plain(edits: Sequence[fixes.SourceEdit], default_file: str) -> list[PlainEdit]:
    """0-based ``SourceEdit``s as 1-based-line ``PlainEdit``s (``default_file`` for those without a file)."""
    return [PlainEdit(e.file or default_file, e.start[0] + 1, e.start[1], e.end[0] + 1, e.end[1], e.text)
            for e in edits]


def _config_edits(fix: Fix, config_file: str | None, default_flags: Sequence[str] | None):
    """The build-flag fix as an edit of the project's configuration file (the editor's quick fix)."""
    if not config_file:
        return None
    text: str | None = None
    if os.path.exists(config_file):
        try:
            with open(config_file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            return None
    edits = fixes.fast_math_edits(text, os.path.basename(config_file) == "pyproject.toml",
                                  str(_params(fix).get("flag", "--use_fast_math")),
                                  list(default_flags if default_flags is not None else BuildConfig().nvcc_flags),
                                  config_file)
    if not edits:
        return None
    return fixes.title(_fix_json(fix)), _plain(edits, config_file)


# ---- the sentence ------------------------------------------------------------------------------

def describe_fix(fix: Fix, reader: LineReader, *, edits: Callable[[], list[PlainEdit] | None] | None = None) -> str:
    """The fix as a sentence (``gpa_lsp.fixes.describe``, beside its title): "change `2.0` to `2.0f`
    at original.cu:33:54 and 33:60". ``edits`` (lazy) gives the quick fix's edits where the sentence
    quotes the text it replaces."""
    return fixes.describe(fix, lambda path, line: source_line(reader, path, line), edits)
