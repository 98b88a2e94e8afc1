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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .cuda_source import CudaSource, Function, Parameter, integer_literal, parse
from .profile.demangle import bare_name

Pos = tuple[int, int]


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
