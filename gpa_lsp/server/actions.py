"""Quick fixes: a Fix description from the advisor -> text edits.

Each kind checks that the text where it would edit is what the fix expects
(a double literal at the stated columns, a loop header on the line, the
parameter as a pointer, a literal block size in the launch) and returns
``None`` otherwise: a quick fix is offered only when its edit is well formed.
Functions take the document's lines and return plain ``TextEdit`` lists so
they can be tested without a server.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any, Sequence

from lsprotocol import types

_DOUBLE = re.compile(
    r"(?<![\w.])(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
_LOOP = re.compile(r"^(\s*)(?:for|while)\s*\(|^(\s*)do\b")
_PRAGMA = re.compile(r"^\s*#\s*pragma\s+unroll\b")
_LAUNCH = re.compile(r"<<<\s*([^,<>]+?)\s*,\s*([^,<>]+?)\s*(?:,[^<>]*)?>>>")


@dataclass(frozen=True)
class FixEdit:
    title: str
    edits: dict[str, list[types.TextEdit]]      # uri -> edits
    create: str | None = None                    # uri of a file to create first


def _pos(line: int, col: int) -> types.Position:
    return types.Position(line=line, character=col)


def _insert(line: int, col: int, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(_pos(line, col), _pos(line, col)), new_text=text)


def _replace(l1: int, c1: int, l2: int, c2: int, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(_pos(l1, c1), _pos(l2, c2)), new_text=text)


def _code_part(text: str) -> str:
    """The line without a trailing // comment (string literals blanked so '//' in them is not a comment)."""
    blanked = re.sub(r'"(?:\\.|[^"\\])*"', lambda m: " " * len(m.group()), text)
    cut = blanked.find("//")
    return text if cut < 0 else text[:cut]


def bare_name(function: str) -> str:
    """A C++ identifier from a mangled (``_Z7stencilPKfPfi``) or demangled (``ns::f(int)``) name."""
    if function.startswith("_Z"):
        s = function[2:]
        nested = s.startswith("N")
        if nested:
            s = s[1:]
            while s and s[0] in "rVKL":
                s = s[1:]
        last = ""
        while s and s[0].isdigit():
            m = re.match(r"(\d+)", s)
            n = int(m.group(1))
            s = s[m.end():]
            last, s = s[:n], s[n:]
            if not nested:
                break
        if last:
            return last
    name = function.split("(")[0].split("<")[0]
    return name.split("::")[-1].strip().split()[-1] if name.strip() else function


# ---- source fixes ----------------------------------------------------------

def float_literal_edits(lines: Sequence[str], line0: int, columns: Sequence[Sequence[int]]) -> list[types.TextEdit] | None:
    if not 0 <= line0 < len(lines):
        return None
    text = lines[line0]
    code = _code_part(text)
    spans: list[tuple[int, int]] = []
    if columns:
        for s, e in columns:
            lit = text[s:e] if 0 <= s < e <= len(code) else ""
            if not lit or not _DOUBLE.fullmatch(lit):
                return None
            if e < len(text) and (text[e].isalnum() or text[e] in "._"):
                return None                 # already suffixed, or not the whole literal
            if s > 0 and (text[s - 1].isalnum() or text[s - 1] in "._"):
                return None
            spans.append((s, e))
    else:
        spans = [(m.start(), m.end()) for m in _DOUBLE.finditer(code)]
    if not spans:
        return None
    return [_insert(line0, e, "f") for _, e in sorted(set(spans))]


def unroll_edits(lines: Sequence[str], line0: int, factor: int) -> list[types.TextEdit] | None:
    if not 0 <= line0 < len(lines) or factor < 1:
        return None
    m = _LOOP.match(lines[line0])
    if not m:
        return None
    indent = m.group(1) if m.group(1) is not None else (m.group(2) or "")
    pragma = f"{indent}#pragma unroll {factor}"
    if line0 > 0 and _PRAGMA.match(lines[line0 - 1]):
        old = lines[line0 - 1].rstrip("\r\n")
        if old.strip() == pragma.strip():
            return None
        return [_replace(line0 - 1, 0, line0 - 1, len(old), pragma)]
    return [_insert(line0, 0, pragma + "\n")]


def _function_header(lines: Sequence[str], name: str, near: int | None,
                     require: str | None = None) -> tuple[int, int] | None:
    """(line, column) of ``name(`` in a function definition, nearest to ``near``."""
    pat = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    found: list[tuple[int, int]] = []
    for i, raw in enumerate(lines):
        code = _code_part(raw)
        for m in pat.finditer(code):
            head = " ".join(_code_part(x) for x in lines[max(0, i - 2):i + 1])
            if require and require not in head:
                continue
            if not re.search(r"__global__|__device__", head):
                continue
            found.append((i, m.start()))
    if not found:
        return None
    if near is None:
        return found[0]
    return min(found, key=lambda lc: abs(lc[0] - near))


def _param_span(lines: Sequence[str], line0: int, col: int) -> list[tuple[int, int, int]] | None:
    """The parameter list after ``name(`` at (line0, col): [(line, start, end)] pieces of text inside the parens."""
    depth = 0
    pieces: list[tuple[int, int, int]] = []
    i, j = line0, lines[line0].index("(", col)
    start = j + 1
    while i < len(lines):
        text = lines[i]
        while j < len(text):
            ch = text[j]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    pieces.append((i, start, j))
                    return pieces
            j += 1
        pieces.append((i, start, len(text.rstrip("\r\n"))))
        i, j, start = i + 1, 0, 0
        if i - line0 > 30:
            return None
    return None


def restrict_edits(lines: Sequence[str], function: str, parameter: str, near: int | None) -> list[types.TextEdit] | None:
    name = bare_name(function)
    head = _function_header(lines, name, near)
    if head is None:
        return None
    pieces = _param_span(lines, *head)
    if pieces is None:
        return None
    decl = re.compile(r"((?:const\s+)?)([A-Za-z_][\w:<>, ]*?)(\s*)((?:const\s*)?)\*\s*((?:__restrict__|__restrict)\s*)?"
                      + re.escape(parameter) + r"\b")
    hits = []
    for ln, s, e in pieces:
        for part in re.finditer(r"[^,]+", lines[ln][s:e]):
            seg = part.group()
            m = decl.fullmatch(seg.strip())
            if m:
                lead = len(seg) - len(seg.lstrip())
                hits.append((ln, s + part.start() + lead, s + part.start() + lead + len(seg.strip()), m))
    if len(hits) != 1:
        return None
    ln, a, b, m = hits[0]
    const_before, base, _, const_after, restrict = m.groups()
    if restrict and (const_before or const_after):
        return None                              # already const __restrict__
    base = base.strip()
    if base.endswith("const"):
        return None
    new = f"const {base}* __restrict__ {parameter}"
    return [_replace(ln, a, ln, b, new)]


def inline_edits(lines: Sequence[str], function: str, kind: str, near: int | None) -> list[types.TextEdit] | None:
    word = "__forceinline__" if kind == "inline" else "__noinline__"
    name = bare_name(function)
    head = _function_header(lines, name, near, require="__device__")
    if head is None:
        return None
    for ln in range(head[0], max(-1, head[0] - 3), -1):
        code = _code_part(lines[ln])
        m = re.search(r"\b__device__\b", code)
        if not m:
            continue
        existing = re.search(r"\b(__forceinline__|__noinline__|__inline__|inline)\b", code)
        if existing:
            if existing.group(1) == word:
                return None
            return [_replace(ln, existing.start(), ln, existing.end(), word)]
        return [_insert(ln, m.start(), word + " ")]
    return None


_DIM3_DECL = re.compile(r"\bdim3\s+(\w+)\s*([({])\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?[)}]")


def block_size_edits(lines: Sequence[str], line0: int, size: int, current: int | None) -> list[types.TextEdit] | None:
    """A literal block size in the launch on ``line0``, or the ``dim3 NAME(literals)`` it names.

    For a dim3, the x extent is scaled by size/current (which must keep it an integer),
    so a 2-D block keeps its shape in y and z.
    """
    if not 0 <= line0 < len(lines) or size < 1:
        return None
    code = _code_part(lines[line0])
    m = _LAUNCH.search(code)
    if not m:
        return None
    block = m.group(2)
    if re.fullmatch(r"\d+[uU]?", block):
        value = int(block.rstrip("uU"))
        if (current is not None and value != int(current)) or value == size:
            return None
        return [_replace(line0, m.start(2), line0, m.end(2), str(size))]
    if not re.fullmatch(r"[A-Za-z_]\w*", block):
        return None                     # an expression: not a literal launch configuration
    decls = [(i, d) for i, raw in enumerate(lines) for d in _DIM3_DECL.finditer(_code_part(raw)) if d.group(1) == block]
    if len(decls) != 1:
        return None
    i, d = decls[0]
    dims = [int(v) for v in d.groups()[2:] if v]
    prod = 1
    for v in dims:
        prod *= v
    if current is not None and prod != int(current):
        return None
    if (dims[0] * size) % prod:
        return None
    new_x = dims[0] * size // prod
    if new_x == dims[0] or new_x < 1:
        return None
    return [_replace(i, d.start(3), i, d.end(3), str(new_x))]


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

def source_fix_edits(fix: dict[str, Any], lines: Sequence[str], line0: int | None) -> list[types.TextEdit] | None:
    """Edits for a source-level fix (``fix`` in its JSON form) on a document's lines; None when not well formed."""
    kind = fix.get("kind")
    p = fix.get("params") or {}
    try:
        if kind == "float_literal" and line0 is not None:
            return float_literal_edits(lines, line0, p.get("columns") or ())
        if kind == "unroll" and line0 is not None:
            return unroll_edits(lines, line0, int(p.get("factor", 4)))
        if kind == "restrict":
            return restrict_edits(lines, str(p["function"]), str(p["parameter"]), line0)
        if kind in ("inline", "noinline"):
            return inline_edits(lines, str(p["function"]), kind, line0)
        if kind == "block_size" and line0 is not None:
            cur = p.get("current")
            return block_size_edits(lines, line0, int(p["size"]), int(cur) if cur is not None else None)
    except (KeyError, TypeError, ValueError):
        return None
    return None


def fix_title(fix: dict[str, Any]) -> str:
    p = fix.get("params") or {}
    kind = fix.get("kind")
    return {
        "float_literal": "GPA: make the double literals float (add 'f')",
        "unroll": f"GPA: add #pragma unroll {p.get('factor', '')}".rstrip(),
        "restrict": f"GPA: make '{p.get('parameter', '')}' const __restrict__",
        "inline": f"GPA: __forceinline__ {bare_name(str(p.get('function', '')))}",
        "noinline": f"GPA: __noinline__ {bare_name(str(p.get('function', '')))}",
        "fast_math": f"GPA: build with {p.get('flag', '--use_fast_math')} (gpa.toml)",
        "block_size": f"GPA: launch with {p.get('size', '')} threads per block (was {p.get('current', '?')})",
    }.get(kind, f"GPA: apply {kind}")


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
