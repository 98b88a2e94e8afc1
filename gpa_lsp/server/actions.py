"""Quick fixes: a Fix from the advisor -> LSP text edits.

The fix itself is planned by gpa_lsp.fixes (pure, on the CUDA source model):
this module only turns a ``FixPlan``'s ``SourceEdit``s into ``TextEdit``s for
the document the editor has open, the build-setting fix's edit of the project
configuration (fast_math's gpa.toml, planned by ``fixes.fast_math_edits``) too. Each function returns ``None`` when
the fix's edit would not be well formed, so a quick fix is offered only then.
"""

from __future__ import annotations

from typing import Any, Sequence

from lsprotocol import types

from .. import fixes

_DOC = "<document>"


def _pos(line: int, col: int) -> types.Position:
    return types.Position(line=line, character=col)


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

def fast_math_edits(config_text: str | None, is_pyproject: bool, flag: str,
                    default_flags: Sequence[str]) -> list[types.TextEdit] | None:
    """``gpa_lsp.fixes.fast_math_edits`` (``flag`` added to the project's build flags) as LSP TextEdits."""
    edits = fixes.fast_math_edits(config_text, is_pyproject, flag, default_flags)
    return None if edits is None else [_replace(e.start[0], e.start[1], e.end[0], e.end[1], e.text) for e in edits]


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
