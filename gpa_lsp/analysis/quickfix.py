"""A Fix as text for people (a sentence) and as plain edits for tools (SARIF ``fixes``).

The edits are the language server's quick fix, built by the same code: when
``gpa_lsp.fixes.plan_fix`` exists it is used, else the builders of
``gpa_lsp.server.actions``. Either way an edit is offered only when it is well
formed on the current source (a double literal at the stated columns, a loop
header on the line, ...); the sentence is written from the Fix's params and
the source text, so it reads right even when no edit can be built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .model import Fix
from .sources import LineReader, source_line


@dataclass(frozen=True)
class PlainEdit:
    """Replace [start, end) with ``text``; lines 1-based, columns 0-based (character offsets)."""

    file: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    text: str


def _short(path: str | None) -> str:
    return os.path.basename(path) if path else "?"


def _params(fix: Fix) -> dict[str, Any]:
    return fix.params or {}


def _fix_json(fix: Fix) -> dict[str, Any]:
    return {"kind": fix.kind, "file": fix.file, "line": fix.line, "params": dict(_params(fix))}


# ---- edits -----------------------------------------------------------------------------------

def fix_edits(fix: Fix, reader: LineReader, *, config_file: str | None = None,
              default_flags: Sequence[str] | None = None) -> tuple[str, list[PlainEdit]] | None:
    """``(title, edits)`` of the quick fix for ``fix``, or None when its edit would not be well formed.

    ``config_file``: the project's gpa.toml / pyproject.toml, for fixes that change the build
    (``fast_math``); without it those give None. A missing config file is created by the edit.
    """
    plan = _plan_from_fixes_module(fix, reader, config_file)
    if plan is not NotImplemented:
        return plan
    from ..server import actions

    data = _fix_json(fix)
    title = actions.fix_title(data)
    if fix.kind == "fast_math":
        if not config_file:
            return None
        from ..config import BuildConfig
        text: str | None = None
        if os.path.exists(config_file):
            try:
                with open(config_file, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                return None
        edits = actions.fast_math_edits(text, os.path.basename(config_file) == "pyproject.toml",
                                        str(_params(fix).get("flag", "--use_fast_math")),
                                        list(default_flags if default_flags is not None else BuildConfig().nvcc_flags))
        return (title, [_plain(config_file, e) for e in edits]) if edits else None
    if not fix.file:
        return None
    lines = reader(fix.file)
    if lines is None:
        return None
    line0 = fix.line - 1 if fix.line else None
    edits = actions.source_fix_edits(data, lines, line0)
    if not edits:
        return None
    return title, [_plain(fix.file, e) for e in edits]


def _plain(file: str, e) -> PlainEdit:
    r = e.range
    return PlainEdit(file, r.start.line + 1, r.start.character, r.end.line + 1, r.end.character, e.new_text)


def _plan_from_fixes_module(fix: Fix, reader: LineReader, config_file: str | None):
    """``gpa_lsp.fixes.plan_fix(fix, read)`` (being written alongside): NotImplemented when absent."""
    try:
        from .. import fixes  # type: ignore[attr-defined]
    except ImportError:
        return NotImplemented
    plan_fix = getattr(fixes, "plan_fix", None)
    if plan_fix is None:
        return NotImplemented

    def read(path: str) -> str | None:
        if config_file and os.path.abspath(path) == os.path.abspath(config_file):
            try:
                with open(path, encoding="utf-8") as fh:
                    return fh.read()
            except OSError:
                return None
        lines = reader(path)
        return None if lines is None else "\n".join(lines) + "\n"

    try:
        plan = plan_fix(fix, read)
    except TypeError:
        return NotImplemented           # another signature than this adapter knows
    if plan is None:
        return None
    out = []
    for e in getattr(plan, "edits", ()):
        (l1, c1), (l2, c2) = _position(e.start), _position(e.end)
        out.append(PlainEdit(e.file or fix.file or config_file or "", l1, c1, l2, c2, e.text))
    return (plan.title, out) if out else None


def _position(p) -> tuple[int, int]:
    """(1-based line, 0-based column) of a position given as (line0, col) or an object with line/character."""
    if isinstance(p, (tuple, list)):
        return int(p[0]) + 1, int(p[1])
    return int(getattr(p, "line")) + 1, int(getattr(p, "character", getattr(p, "column", 0)))


# ---- the sentence ------------------------------------------------------------------------------

def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def describe_fix(fix: Fix, reader: LineReader, *, edits: Callable[[], list[PlainEdit] | None] | None = None) -> str:
    """The fix as a sentence: "change `2.0` to `2.0f` at original.cu:33:54 and 33:60".

    Columns are printed 1-based (as editors show them); ``edits`` (lazy) gives the quick fix's
    edits where the sentence quotes the text it replaces.
    """
    p = _params(fix)
    where = f"{_short(fix.file)}:{fix.line}" if fix.file and fix.line else ""
    at = f" at {where}" if where else ""
    kind = fix.kind
    if kind == "float_literal":
        text = source_line(reader, fix.file, fix.line)
        cols = [tuple(c) for c in p.get("columns") or () if len(c) == 2]
        if text is not None and cols and all(0 <= s < e <= len(text) for s, e in cols):
            by_lit: dict[str, list[str]] = {}
            for s, e in cols:
                by_lit.setdefault(text[s:e], []).append(f"{fix.line}:{s + 1}")
            parts = []
            for n, (lit, places) in enumerate(by_lit.items()):
                places[0] = (f"{_short(fix.file)}:" if n == 0 else "") + places[0]
                parts.append(f"`{lit}` to `{lit}f` at {_and(places)}")
            return "change " + _and(parts)
        return f"add an `f` suffix to the double literals{at}"
    if kind == "unroll":
        factor = int(p.get("factor", 0) or 0)
        what = "keep the loop rolled" if factor == 1 else f"unroll it {factor} times" if factor > 1 else "unroll it"
        pragma = f"#pragma unroll {factor}" if factor else "#pragma unroll"
        return f"put `{pragma}` before the loop{at} ({what})"
    if kind == "restrict":
        param, func = p.get("parameter", "?"), _bare(str(p.get("function", "")))
        got = edits() if edits else None
        if got and len(got) == 1:
            e = got[0]
            old = _old_text(reader, e)
            if old and e.start_line == e.end_line:
                return (f"change `{old}` to `{e.text}` in {func}'s parameters at "
                        f"{_short(e.file)}:{e.start_line}:{e.start_col + 1}")
        return f"declare `{param}` of {func} as `const T* __restrict__`{at}"
    if kind in ("inline", "noinline"):
        word = "__forceinline__" if kind == "inline" else "__noinline__"
        return f"mark the device function {_bare(str(p.get('function', '')))} `{word}`{at}"
    if kind == "fast_math":
        flag = p.get("flag", "--use_fast_math")
        return f"build with `{flag}` (add it to [build] nvcc_flags in gpa.toml)"
    if kind == "block_size":
        size, cur = p.get("size"), p.get("current")
        was = f" instead of {cur}" if cur else ""
        got = edits() if edits else None
        how = ""
        if got and len(got) == 1 and got[0].start_line == got[0].end_line:
            e = got[0]
            old = _old_text(reader, e)
            if old:
                same = e.start_line == fix.line and e.file == fix.file
                how = (f" (change `{old}` to `{e.text}` at {_short(e.file)}:{e.start_line}:{e.start_col + 1}"
                       + ("" if same else ", the block size this launch uses") + ")")
        return f"launch with {size} threads per block{was}{at}{how}"
    rest = ", ".join(f"{k} {v}" for k, v in p.items())
    return f"{kind.replace('_', ' ')}{at}" + (f" ({rest})" if rest else "")


def _old_text(reader: LineReader, e: PlainEdit) -> str:
    text = source_line(reader, e.file, e.start_line)
    if text is None or e.start_line != e.end_line:
        return ""
    return text[e.start_col:e.end_col]


def _bare(function: str) -> str:
    if not function:
        return "the function"
    try:
        from ..server.actions import bare_name
        return bare_name(function)
    except ImportError:     # pragma: no cover - lsprotocol missing
        return function.split("(")[0]
