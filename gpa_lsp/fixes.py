"""Fixes as edits: the advisor's ``Fix`` (what to change) -> a ``FixPlan`` (exact source edits, build flags).

Pure functions over texts, with no editor types: the language server turns a
plan into LSP text edits (server/actions.py), and experiments apply it to
scratch copies of the sources (``apply_plan``), never to the user's files.

A fix does the whole job the advice describes, found on the syntax tree of
the CUDA source model (gpa_lsp.cuda_source, tree-sitter), not by regular
expressions: the statement, loop body, parameter list or launch is what the
grammar delimits. Every kind checks that the text is what the fix expects and
returns ``None`` otherwise (a literal already suffixed, no loop on the line, a
parameter that is written through, no such function, a launch whose block size
is an expression, a syntax error around the target): an edit is offered only
when it is well formed.

kinds:
  float_literal  every double literal in the flagged statement (a loop header's
                 line: the whole loop) gets an ``f``; the columns the advisor
                 named must still be double literals
  unroll         ``#pragma unroll N`` put before, or replacing the pragma of, the
                 loop whose header is on the line
  restrict       ``const T* __restrict__`` on each named pointer parameter that
                 is not written through (and on its prototype's parameter)
  inline / noinline  ``__forceinline__`` / ``__noinline__`` on the device function
  block_size     the literal block size of the launch on the line, or the x extent
                 of the ``dim3`` of literals it names
  fast_math      no source edit: ``--use_fast_math`` added to the build
                 (``fast_math_edits``: the edit of gpa.toml / pyproject.toml)
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .cuda_source import CudaSource, Function, Parameter, double_literal_ending, integer_literal, parse
from .profile.demangle import bare_name

Pos = tuple[int, int]


@dataclass(frozen=True)
class PlainEdit:
    """Replace [start, end) with ``text``; lines 1-based, columns 0-based (character offsets)."""

    file: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class SourceEdit:
    file: str
    start: Pos          # 0-based (line, character)
    end: Pos
    text: str


@dataclass(frozen=True)
class FixPlan:
    title: str
    edits: tuple[SourceEdit, ...]
    nvcc_flags: tuple[str, ...] = ()     # flags to add to the build (a build-setting fix)


Reader = Callable[[str], "str | None"]


# ---- the fix in one form ------------------------------------------------------------

def _fields(fix: Any) -> tuple[str, str | None, int | None, dict]:
    if isinstance(fix, Mapping):
        kind, file, line, params = fix.get("kind"), fix.get("file"), fix.get("line"), fix.get("params")
    else:
        kind, file, line, params = fix.kind, fix.file, fix.line, fix.params
    return str(kind or ""), (str(file) if file else None), (int(line) if line else None), dict(params or {})


def title(fix: Any) -> str:
    """The fix in a few words, as the editor's quick fix names it."""
    kind, _, _, p = _fields(fix)
    names = _parameter_names(p)
    return {
        "float_literal": "GPA: make the double literals float (add 'f')",
        "unroll": f"GPA: add #pragma unroll {p.get('factor', '')}".rstrip(),
        "restrict": "GPA: make " + ", ".join(f"'{n}'" for n in names) + " const __restrict__" if names
        else "GPA: make '' const __restrict__",
        "inline": f"GPA: __forceinline__ {bare_name(str(p.get('function', '')))}",
        "noinline": f"GPA: __noinline__ {bare_name(str(p.get('function', '')))}",
        "fast_math": f"GPA: build with {p.get('flag', '--use_fast_math')} (gpa.toml)",
        "block_size": f"GPA: launch with {p.get('size', '')} threads per block (was {p.get('current', '?')})",
    }.get(kind, f"GPA: apply {kind}")


# ---- the fix in words: the sentence the reports print (the title above is the quick fix's) ----

LineOf = Callable[[str, int], "str | None"]     # (path, 1-based line) -> the line's text, None when unreadable


def _short(path: str | None) -> str:
    return os.path.basename(path) if path else "?"



def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def describe(fix: Any, line_of: LineOf, edits: Callable[[], "list[PlainEdit] | None"] | None = None) -> str:
    """The fix as a sentence: "change `2.0` to `2.0f` at original.cu:33:54 and 33:60".

    Columns are printed 1-based (as editors show them); ``line_of(path, line)`` gives a source line
    (1-based, None when unreadable); ``edits`` (lazy) gives the plan's edits (``plan_fix``, as 1-based
    ``PlainEdit``) where the sentence quotes the text it replaces.
    """
    kind, file, line, p = _fields(fix)
    where = f"{_short(file)}:{line}" if file and line else ""
    at = f" at {where}" if where else ""
    if kind == "float_literal":
        got = edits() if edits else None
        places = _literal_places(got, line_of) if got else None
        if not places:
            text = line_of(file, line) if file and line else None
            cols = [tuple(c) for c in p.get("columns") or () if len(c) == 2]
            if text is not None and cols and all(0 <= s < e <= len(text) for s, e in cols):
                places = [(text[s:e], file or "", line or 0, s) for s, e in cols]
        if places:
            by_lit: dict[str, list[tuple[str, int, int]]] = {}
            for lit, lfile, lline, col in places:
                by_lit.setdefault(lit, []).append((lfile, lline, col))
            parts, first = [], True
            for lit, where_ in by_lit.items():
                refs = []
                for lfile, lline, col in where_:
                    refs.append((f"{_short(lfile)}:" if first else "") + f"{lline}:{col + 1}")
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
        changes = _replacements(got, line_of) if got else ""
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
            old = _old_text(line_of, e)
            if old:
                same = e.start_line == line and e.file == file
                how = (f" (change `{old}` to `{e.text}` at {_short(e.file)}:{e.start_line}:{e.start_col + 1}"
                       + ("" if same else ", the block size this launch uses") + ")")
        return f"launch with {size} threads per block{was}{at}{how}"
    rest = ", ".join(f"{k} {v}" for k, v in p.items())
    return f"{kind.replace('_', ' ')}{at}" + (f" ({rest})" if rest else "")


def _literal_places(edits: list[PlainEdit], line_of: LineOf) -> list[tuple[str, str, int, int]] | None:
    """(literal, file, line, 0-based start column) for edits that append ``f`` to a double literal."""
    out = []
    for e in edits:
        text = line_of(e.file, e.start_line)
        if e.text != "f" or (e.start_line, e.start_col) != (e.end_line, e.end_col) or text is None:
            return None
        found = double_literal_ending(text[:e.start_col])
        if found is None:
            return None
        out.append((found[0], e.file, e.start_line, found[1]))
    return sorted(out, key=lambda t: (t[1], t[2], t[3]))


def _replacements(edits: list[PlainEdit], line_of: LineOf) -> str:
    """"`old` to `new` at k.cu:3:31 and `old2` to `new2` at 3:42" for single-line replacements ('' else)."""
    parts, first = [], True
    for e in sorted(edits, key=lambda e: (e.file, e.start_line, e.start_col)):
        old = _old_text(line_of, e)
        if not old or e.start_line != e.end_line:
            return ""
        parts.append(f"`{old}` to `{e.text}` at " + (f"{_short(e.file)}:" if first else "")
                     + f"{e.start_line}:{e.start_col + 1}")
        first = False
    return _and(parts)


def _old_text(line_of: LineOf, e: PlainEdit) -> str:
    text = line_of(e.file, e.start_line)
    if text is None or e.start_line != e.end_line:
        return ""
    return text[e.start_col:e.end_col]


def _bare(function: str) -> str:
    if not function:
        return "the function"
    return bare_name(function)


def _parameter_names(p: Mapping) -> list[str]:
    names = p.get("parameters")
    if isinstance(names, str):
        names = [names]
    if not names:
        names = [p["parameter"]] if p.get("parameter") else []
    return [str(n) for n in names]


# ---- planning -----------------------------------------------------------------------

def plan_fix(fix: Any, read: Reader) -> FixPlan | None:
    """The edits (or build flags) that carry out ``fix`` (a ``Fix`` or its JSON dict); None when not well formed.

    ``read(path)`` gives a file's current text (None when it cannot be read).
    """
    try:
        kind, file, line, p = _fields(fix)
    except (TypeError, ValueError, AttributeError):
        return None
    if kind == "fast_math":
        return FixPlan(title(fix), (), (str(p.get("flag") or "--use_fast_math"),))
    if not file:
        return None
    text = read(file)
    if text is None:
        return None
    src = parse(text)
    line0 = line - 1 if line else None
    try:
        got = _PLANNERS[kind](src, line0, p) if kind in _PLANNERS else None
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if not got:
        return None
    edits, name = got if isinstance(got, tuple) else (got, title(fix))
    return FixPlan(name, tuple(SourceEdit(file, s, e, t) for s, e, t in sorted(set(edits))))


Edit = tuple[Pos, Pos, str]


def _float_literal(src: CudaSource, line0: int | None, p: dict) -> list[Edit] | None:
    if line0 is None or not 0 <= line0 < len(src.lines):
        return None
    columns = p.get("columns") or ()
    anchors = []
    for s, e in columns:
        lit = src.literal_at(line0, int(s), int(e))
        if lit is None:
            return None                 # not (or no longer) a double literal: suffixed, or not the whole token
        anchors.append(lit)
    if not anchors:
        anchors = src.literals_on_line(line0)
    if not anchors:
        return None
    scopes: list[tuple[Pos, Pos]] = []
    loop = src.loop_at(line0)
    if loop is not None:
        if loop.has_error:
            return None
        scopes.append((loop.start, loop.end))
    for lit in anchors:
        if any(a <= lit.start and lit.end <= b for a, b in scopes):
            continue
        node = src.statement_node(lit.start)
        if node is None:
            return None                 # a literal outside any statement (a global initializer)
        if src.erroneous(node):
            return None
        stmt = src.token(node)
        if node.type in ("if_statement", "switch_statement"):
            cond = node.child_by_field_name("condition")
            stmt = src.token(cond) if cond is not None else stmt
        scopes.append((stmt.start, stmt.end))
    lits = {l for a, b in scopes for l in src.double_literals(a, b)}
    return [(l.end, l.end, "f") for l in lits]


def _unroll(src: CudaSource, line0: int | None, p: dict) -> list[Edit] | None:
    factor = int(p.get("factor", 4))
    if line0 is None or factor < 1:
        return None
    loop = src.loop_at(line0)
    if loop is None or loop.has_error or not loop.first_on_line:
        return None
    indent = src.line_text(line0)[:loop.start[1]]
    pragma = f"{indent}#pragma unroll {factor}"
    if loop.pragma is not None:
        if " ".join(loop.pragma.text.split()) == f"#pragma unroll {factor}":
            return None                 # already what is asked
        row = loop.pragma.start[0]
        return [((row, 0), (row, len(src.line_text(row))), pragma)]
    return [((line0, 0), (line0, 0), pragma + "\n")]


def _restrict_text(param: Parameter) -> str | None:
    """``const T* __restrict__ name`` for a single-level pointer parameter (None if nothing to change)."""
    if param.pointer != 1 or (param.const and param.restrict) or param.default:
        return None
    # the type with its qualifiers as written (``float``, ``const float``, ``float const``)
    head = " ".join(param.prefix.split())
    words = head.split()
    if "const" not in words:
        head = "const " + head
    tail = "const __restrict__" if param.pointer_const else "__restrict__"
    return f"{head}* {tail} {param.name}" if param.name else f"{head}* {tail}"


def _restrict(src: CudaSource, line0: int | None, p: dict) -> tuple[list[Edit], str] | None:
    fn = src.function(str(p["function"]), line0)
    if fn is None or fn.has_error or fn.body is None:
        return None
    edits: list[Edit] = []
    done: list[str] = []
    for name in _parameter_names(p):
        param = fn.parameter(name)
        if param is None or param.pointer != 1:
            continue
        if src.written_through(name, fn.body.start, fn.body.end):
            continue                    # stored through (or handed on): const would not compile
        new = _restrict_text(param)
        if new is None:
            continue
        edits.append((param.start, param.end, new))
        done.append(name)
        for decl in _prototypes(src, fn):
            new_decl = _restrict_text(decl.parameters[param.index])
            if new_decl is not None:
                edits.append((decl.parameters[param.index].start, decl.parameters[param.index].end, new_decl))
    if not edits:
        return None
    return edits, title({"kind": "restrict", "params": {"parameters": done}})


def _prototypes(src: CudaSource, fn: Function) -> list[Function]:
    """Declarations of ``fn`` elsewhere in the file (same name and parameter count): they must change with it."""
    return [d for d in src.declarations if d.name == fn.name and len(d.parameters) == len(fn.parameters)
            and not d.has_error and (d.kernel or d.device)]


def _inline(word: str):
    def plan(src: CudaSource, line0: int | None, p: dict) -> list[Edit] | None:
        fn = src.function(str(p["function"]), line0)
        if fn is None or fn.has_error or not fn.device:
            return None
        device = next(t for t in fn.specifiers if t.text == "__device__")
        existing = fn.inline_specifier
        if existing is not None:
            if existing.text == word:
                return None
            return [(existing.start, existing.end, word)]
        return [(device.start, device.start, word + " ")]
    return plan


def _block_size(src: CudaSource, line0: int | None, p: dict) -> list[Edit] | None:
    size = int(p["size"])
    current = int(p["current"]) if p.get("current") is not None else None
    if line0 is None or size < 1:
        return None
    launch = next((l for l in src.launches if l.line == line0), None)
    if launch is None or launch.has_error or launch.block is None:
        return None
    block = launch.block
    if block.kind == "number_literal":
        value = integer_literal(block.text)
        if value is None or (current is not None and value != current) or value == size:
            return None
        return [(block.start, block.end, str(size))]
    if block.kind != "identifier":
        return None                     # an expression: not a literal launch configuration
    decls = [d for d in src.dim3s if d.name == block.text]
    if len(decls) != 1 or not decls[0].literal:
        return None
    d = decls[0]
    prod = d.threads
    if current is not None and prod != current:
        return None
    if (d.dims[0] * size) % prod:
        return None
    new_x = d.dims[0] * size // prod
    if new_x == d.dims[0] or new_x < 1:
        return None
    x = d.args[0]
    return [(x.start, x.end, str(new_x))]


_PLANNERS: dict[str, Callable[[CudaSource, int | None, dict], list[Edit] | None]] = {
    "float_literal": _float_literal,
    "unroll": _unroll,
    "restrict": _restrict,
    "inline": _inline("__forceinline__"),
    "noinline": _inline("__noinline__"),
    "block_size": _block_size,
}


# ---- the build-flag fix: the project's configuration file ---------------------------------

def _config_insert(file: str, line: int, col: int, text: str) -> SourceEdit:
    return SourceEdit(file, (line, col), (line, col), text)


def _config_replace(file: str, l1: int, c1: int, l2: int, c2: int, text: str) -> SourceEdit:
    return SourceEdit(file, (l1, c1), (l2, c2), text)


def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def fast_math_edits(config_text: str | None, is_pyproject: bool, flag: str,
                    default_flags: Sequence[str], file: str = "") -> list[SourceEdit] | None:
    """Edits of the project's configuration file ``file`` adding ``flag`` to [build] nvcc_flags of
    gpa.toml (or [tool.gpa.build] of pyproject.toml); ``config_text`` None = a new file. None when
    the flag is there already or the table is not one this edit can extend well formed (a dotted or
    inline table, a syntax error): the build-flag fix (``fast_math``) as text edits."""
    section = "tool.gpa.build" if is_pyproject else "build"
    if config_text is None:
        return [_config_insert(file, 0, 0, f"[{section}]\nnvcc_flags = {_toml_list([*default_flags, flag])}\n")]
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
        return [_config_replace(file, start, 0, end, len(lines[end]), f"nvcc_flags = {_toml_list([*flags, flag])}")]
    new_line = f"nvcc_flags = {_toml_list([*default_flags, flag])}"
    if hdr is not None:
        return [_config_insert(file, hdr + 1, 0, new_line + "\n")]
    tail = "" if config_text.endswith("\n") or not config_text else "\n"
    return [_config_insert(file, len(lines) if config_text.endswith("\n") or not config_text else len(lines) - 1,
                           0 if config_text.endswith("\n") or not config_text else len(lines[-1]),
                           f"{tail}\n[{section}]\n{new_line}\n")]


# ---- applying --------------------------------------------------------------------------

def _offset(lines: list[str], starts: list[int], pos: Pos, text: str) -> int:
    line, col = pos
    if line >= len(lines):
        return len(text)
    body = lines[line][:-1] if lines[line].endswith("\r") else lines[line]
    return starts[line] + min(col, len(body))


def apply_edits_to_text(text: str, edits) -> str:
    """``text`` with non-overlapping edits (objects with ``start``, ``end``, ``text``) applied."""
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    spans = sorted(((_offset(lines, starts, e.start, text), _offset(lines, starts, e.end, text), e.text) for e in edits),
                   key=lambda s: (s[0], s[1]))
    for (a1, b1, _), (a2, _, _) in zip(spans, spans[1:]):
        if a2 < b1:
            raise ValueError("overlapping edits")
    out = text
    for a, b, new in reversed(spans):
        out = out[:a] + new + out[b:]
    return out


def apply_plan(plan: FixPlan, texts: Mapping[str, str]) -> dict[str, str]:
    """The texts with the plan's edits applied (files without edits unchanged); KeyError for a file not given."""
    out = dict(texts)
    by_file: dict[str, list[SourceEdit]] = {}
    for e in plan.edits:
        by_file.setdefault(e.file, []).append(e)
    for f, edits in by_file.items():
        out[f] = apply_edits_to_text(texts[f], edits)
    return out
