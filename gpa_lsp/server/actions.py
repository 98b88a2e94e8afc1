"""Quick fixes: a Fix from the advisor -> LSP text edits.

The fix itself is planned by gpa_lsp.fixes (pure, on the CUDA source model):
this module only turns a ``FixPlan``'s ``SourceEdit``s into ``TextEdit``s for
the document the editor has open, and edits the project configuration for the
build-setting fix (fast_math's gpa.toml). Each function returns ``None`` when
the fix's edit would not be well formed, so a quick fix is offered only then.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any, Sequence

from lsprotocol import types

from .. import fixes

_DOC = "<document>"


def _pos(line: int, col: int) -> types.Position:
    return types.Position(line=line, character=col)


def _insert(line: int, col: int, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(_pos(line, col), _pos(line, col)), new_text=text)


def _replace(l1: int, c1: int, l2: int, c2: int, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(_pos(l1, c1), _pos(l2, c2)), new_text=text)


def text_edits(plan: fixes.FixPlan | None, file: str | None = None) -> list[types.TextEdit] | None:
    """The plan's edits of ``file`` (all of them when None) as LSP TextEdits; None for no plan or no edit."""
    if plan is None:
        return None
    out = [_replace(e.start[0], e.start[1], e.end[0], e.end[1], e.text)
           for e in plan.edits if file is None or e.file == file]
    return out or None


def _on_lines(kind: str, lines: Sequence[str], line0: int | None, **params: Any) -> list[types.TextEdit] | None:
    """Plan a fix of ``kind`` on a document given as its lines."""
    text = "\n".join(lines)
    fix = {"kind": kind, "file": _DOC, "line": None if line0 is None else line0 + 1, "params": params}
    return text_edits(fixes.plan_fix(fix, lambda path: text if path == _DOC else None))


# ---- source fixes (one per kind, on a document's lines) ------------------------------------

def float_literal_edits(lines: Sequence[str], line0: int, columns: Sequence[Sequence[int]]) -> list[types.TextEdit] | None:
    return _on_lines("float_literal", lines, line0, columns=[list(c) for c in columns])


def unroll_edits(lines: Sequence[str], line0: int, factor: int) -> list[types.TextEdit] | None:
    return _on_lines("unroll", lines, line0, factor=factor)


def restrict_edits(lines: Sequence[str], function: str, parameter: str | Sequence[str],
                   near: int | None) -> list[types.TextEdit] | None:
    names = [parameter] if isinstance(parameter, str) else list(parameter)
    return _on_lines("restrict", lines, near, function=function, parameters=names)


def inline_edits(lines: Sequence[str], function: str, kind: str, near: int | None) -> list[types.TextEdit] | None:
    return _on_lines(kind, lines, near, function=function)


def block_size_edits(lines: Sequence[str], line0: int, size: int, current: int | None) -> list[types.TextEdit] | None:
    """A literal block size in the launch on ``line0``, or the x extent of the ``dim3 NAME(literals)`` it names."""
    return _on_lines("block_size", lines, line0, size=size, current=current)


# ---- project configuration fix ------------------------------------------------

def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def fast_math_edits(config_text: str | None, is_pyproject: bool, flag: str,
                    default_flags: Sequence[str]) -> list[types.TextEdit] | None:
    """Edits adding ``flag`` to [build] nvcc_flags of gpa.toml (or [tool.gpa.build]); text None = new file."""
    section = "tool.gpa.build" if is_pyproject else "build"
    if config_text is None:
        return [_insert(0, 0, f"[{section}]\nnvcc_flags = {_toml_list([*default_flags, flag])}\n")]
    try:
        data = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError:
        return None
    table = data.get("tool", {}).get("gpa", {}) if is_pyproject else data
    build = table.get("build", {})
    if not isinstance(build, dict):
        return None
    flags = build.get("nvcc_flags")
    if isinstance(flags, str):
        flags = [flags]
    if flags is not None and not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
        return None
    if flags is not None and flag in flags:
        return None
    lines = config_text.splitlines()
    header = re.compile(r"^\s*\[" + re.escape(section) + r"\]\s*(#.*)?$")
    hdr = next((i for i, l in enumerate(lines) if header.match(l)), None)
    if flags is not None:
        if hdr is None:
            return None                      # a dotted or inline table: leave it to the user
        start = None
        for i in range(hdr + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if re.match(r"^\s*nvcc_flags\s*=", lines[i]):
                start = i
                break
        if start is None:
            return None
        end = start
        depth = lines[start].count("[") - lines[start].count("]")
        while depth > 0 and end + 1 < len(lines):
            end += 1
            depth += lines[end].count("[") - lines[end].count("]")
        return [_replace(start, 0, end, len(lines[end]), f"nvcc_flags = {_toml_list([*flags, flag])}")]
    new_line = f"nvcc_flags = {_toml_list([*default_flags, flag])}"
    if hdr is not None:
        return [_insert(hdr + 1, 0, new_line + "\n")]
    tail = "" if config_text.endswith("\n") or not config_text else "\n"
    return [_insert(len(lines) if config_text.endswith("\n") or not config_text else len(lines) - 1,
                    0 if config_text.endswith("\n") or not config_text else len(lines[-1]),
                    f"{tail}\n[{section}]\n{new_line}\n")]


# ---- dispatcher -------------------------------------------------------------------

_NEEDS_LINE = frozenset({"float_literal", "unroll", "block_size"})


def source_fix_edits(fix: dict[str, Any], lines: Sequence[str], line0: int | None) -> list[types.TextEdit] | None:
    """Edits for a source-level fix (``fix`` in its JSON form) on a document's lines; None when not well formed.

    ``line0`` is the fix's line as it is now in the document (the editor may have moved it).
    """
    kind = fix.get("kind")
    if kind == "fast_math" or (kind in _NEEDS_LINE and line0 is None):
        return None
    text = "\n".join(lines)
    moved = {**fix, "file": _DOC, "line": None if line0 is None else line0 + 1}
    return text_edits(fixes.plan_fix(moved, lambda path: text if path == _DOC else None))


def fix_title(fix: dict[str, Any]) -> str:
    return fixes.title(fix)


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply non-overlapping TextEdits to ``text`` (for tests and applyAndMeasure checks)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for l in lines:
        offsets.append(offsets[-1] + len(l))

    def off(p: types.Position) -> int:
        if p.line >= len(lines):
            return len(text)
        return offsets[p.line] + min(p.character, len(lines[p.line].rstrip("\r\n")))

    out = text
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a, b = off(e.range.start), off(e.range.end)
        out = out[:a] + e.new_text + out[b:]
    return out
