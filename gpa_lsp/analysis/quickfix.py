"""A Fix as text for people (a sentence) and as plain edits for tools (SARIF ``fixes``).

The edits are the language server's quick fix, planned by the same code
(``gpa_lsp.fixes.plan_fix``; the build-flag fix edits gpa.toml as
``server.actions.fast_math_edits`` does), and offered only when well formed on
the current source. The sentence quotes what those edits change where they can
be built, and is written from the Fix's params otherwise.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import fixes
from ..config import BuildConfig
from ..profile.demangle import bare_name
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
    return plan.title, [PlainEdit(e.file or fix.file or "", e.start[0] + 1, e.start[1], e.end[0] + 1, e.end[1], e.text)
                        for e in plan.edits]


def _config_edits(fix: Fix, config_file: str | None, default_flags: Sequence[str] | None):
    """The build-flag fix as an edit of the project's configuration file (the editor's quick fix)."""
    if not config_file:
        return None
    from ..server import actions  # deferred: the server layer (lsprotocol); only this build-flag edit uses it
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
    if not edits:
        return None
    out = []
    for e in edits:
        r = e.range
        out.append(PlainEdit(config_file, r.start.line + 1, r.start.character, r.end.line + 1, r.end.character,
                             e.new_text))
    return fixes.title(_fix_json(fix)), out


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
        got = edits() if edits else None
        places = _literal_places(got, reader) if got else None
        if not places:
            text = source_line(reader, fix.file, fix.line)
            cols = [tuple(c) for c in p.get("columns") or () if len(c) == 2]
            if text is not None and cols and all(0 <= s < e <= len(text) for s, e in cols):
                places = [(text[s:e], fix.file or "", fix.line or 0, s) for s, e in cols]
        if places:
            by_lit: dict[str, list[tuple[str, int, int]]] = {}
            for lit, file, line, col in places:
                by_lit.setdefault(lit, []).append((file, line, col))
            parts, first = [], True
            for lit, where_ in by_lit.items():
                refs = []
                for file, line, col in where_:
                    refs.append((f"{_short(file)}:" if first else "") + f"{line}:{col + 1}")
                    first = False
                parts.append(f"`{lit}` to `{lit}f` at {_and(refs)}")
            return "change " + _and(parts)
        return f"add an `f` suffix to the double literals{at}"
    if kind == "unroll":
        factor = int(p.get("factor", 0) or 0)
        what = "keep the loop rolled" if factor == 1 else f"unroll it {factor} times" if factor > 1 else "unroll it"
        pragma = f"#pragma unroll {factor}" if factor else "#pragma unroll"
        return f"put `{pragma}` before the loop{at} ({what})"
    if kind == "restrict":
        names = p.get("parameters") or ([p["parameter"]] if p.get("parameter") else [])
        names = [names] if isinstance(names, str) else list(names)
        func = _bare(str(p.get("function", "")))
        got = edits() if edits else None
        changes = _replacements(got, reader) if got else ""
        if changes:
            return f"change {changes} in {func}'s parameters"
        return f"declare {_and([f'`{n}`' for n in names]) or 'the pointer'} of {func} as `const T* __restrict__`{at}"
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


_DOUBLE_BEFORE = re.compile(r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$|\d+[eE][+-]?\d+$")


def _literal_places(edits: list[PlainEdit], reader: LineReader) -> list[tuple[str, str, int, int]] | None:
    """(literal, file, line, 0-based start column) for edits that append ``f`` to a double literal."""
    out = []
    for e in edits:
        text = source_line(reader, e.file, e.start_line)
        if e.text != "f" or (e.start_line, e.start_col) != (e.end_line, e.end_col) or text is None:
            return None
        m = _DOUBLE_BEFORE.search(text[:e.start_col])
        if not m:
            return None
        out.append((m.group(0), e.file, e.start_line, m.start()))
    return sorted(out, key=lambda t: (t[1], t[2], t[3]))


def _replacements(edits: list[PlainEdit], reader: LineReader) -> str:
    """"`old` to `new` at k.cu:3:31 and `old2` to `new2` at 3:42" for single-line replacements ('' else)."""
    parts, first = [], True
    for e in sorted(edits, key=lambda e: (e.file, e.start_line, e.start_col)):
        old = _old_text(reader, e)
        if not old or e.start_line != e.end_line:
            return ""
        parts.append(f"`{old}` to `{e.text}` at " + (f"{_short(e.file)}:" if first else "")
                     + f"{e.start_line}:{e.start_col + 1}")
        first = False
    return _and(parts)


def _old_text(reader: LineReader, e: PlainEdit) -> str:
    text = source_line(reader, e.file, e.start_line)
    if text is None or e.start_line != e.end_line:
        return ""
    return text[e.start_col:e.end_col]


def _bare(function: str) -> str:
    if not function:
        return "the function"
    return bare_name(function)
