"""Reading the user's sources for fixes: never fails, a missing file just gives no fix.

Also the scanners the optimizers use (double literals, literal launch
configurations, kernel parameter lists, loops), in the 1-based line terms of
the analysis; they read the facts from the source model (gpa_lsp.cuda_source).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .. import cuda_source
from ..frozen import frozen_new
from ..profile.source_paths import map_source_path

LineReader = Callable[[str], "list[str] | None"]


def make_reader(source_map: Sequence[tuple[str, str]] = (), root: str | None = None,
                overrides: dict[str, str] | None = None,
                mapper: Callable[[str], str] | None = None) -> LineReader:
    """A cached ``path -> lines | None`` over build-time paths; ``overrides`` holds unsaved editor text.

    ``mapper`` (build-time path -> local path) wins over ``source_map``/``root``.
    """
    cache: dict[str, list[str] | None] = {}

    def read(path: str) -> list[str] | None:
        if path in cache:
            return cache[path]
        target = mapper(path) if mapper else map_source_path(path, source_map, root)
        lines: list[str] | None = None
        if overrides and (path in overrides or target in overrides):
            lines = (overrides.get(path) or overrides.get(target) or "").splitlines()
        else:
            try:
                lines = Path(target).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = None
        cache[path] = lines
        return lines

    return read


def source_line(reader: LineReader, path: str | None, line: int | None) -> str | None:
    if not path or not line:
        return None
    lines = reader(path)
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


def _code_mask(text: str) -> list[bool]:
    """True for characters outside comments and string/char literals."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            for k in range(i, n):
                mask[k] = False
            break
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                mask[k] = False
            i = j
            continue
        if text[i] in "\"'":
            q = text[i]
            j = i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            for k in range(i, min(n, j + 1)):
                mask[k] = False
            i = j + 1
            continue
        i += 1
    return mask


def double_literals(text: str) -> list[tuple[int, int]]:
    """0-based [start, end) columns of floating literals with no ``f``/``F`` suffix (doubles) on one line.

    The line is parsed alone (not through the model cache, which holds whole files): the
    literals are tokens, found even where the line is no complete statement.
    """
    return [(l.start[1], l.end[1]) for l in cuda_source.CudaSource(text).double_literals() if l.start[0] == 0]


@dataclass(frozen=True)
class LaunchSite:
    file: str
    line: int
    kernel: str
    current: int              # threads per block
    columns: tuple[int, int]  # the block argument of the launch (a literal or a dim3's name)
    dims: tuple[int, ...] = ()


def launch_sites(path: str, lines: list[str], kernel: str) -> list[LaunchSite]:
    """Launches of ``kernel`` whose block size is a literal or a ``dim3`` of literals in the same file."""
    src = cuda_source.parse_lines(lines)
    dims = {d.name: d for d in src.dim3s if d.literal}
    out = []
    for launch in src.launches_of(kernel):
        block = launch.block
        if block is None or block.start[0] != block.end[0]:
            continue
        value = cuda_source.integer_literal(block.text) if block.kind == "number_literal" else None
        cols = (block.start[1], block.end[1])
        if value is not None:
            out.append(LaunchSite(path, launch.line + 1, kernel, value, cols, (value,)))
        elif block.kind == "identifier" and block.text in dims:
            d = dims[block.text]
            out.append(LaunchSite(path, launch.line + 1, kernel, d.threads, cols, tuple(d.dims)))
    return out


def _definition(lines: list[str], def_line: int) -> cuda_source.Function | None:
    """The function definition whose name is on 1-based ``def_line`` (else the one whose text holds it)."""
    src = cuda_source.parse_lines(lines)
    return (next((f for f in src.functions if f.line == def_line - 1), None)
            or src.function_at(def_line - 1))


def find_function(lines: list[str], name: str) -> int | None:
    """1-based line of the name in the definition of ``name`` (a ``__global__``/``__device__`` function)."""
    f = cuda_source.parse_lines(lines).function(name)
    return f.line + 1 if f is not None else None


def pointer_parameters(lines: list[str], def_line: int) -> list[tuple[str, str]]:
    """(name, declaration) of pointer parameters in the signature starting at ``def_line``."""
    f = _definition(lines, def_line)
    if f is None:
        return []
    return [(p.name, " ".join(p.text.split())) for p in f.parameters if p.pointer and p.name]


def body_range(lines: list[str], def_line: int) -> tuple[int, int]:
    """1-based inclusive lines from ``def_line`` to the end of that function's body."""
    f = _definition(lines, def_line)
    if f is None or f.body is None:
        return def_line, len(lines)
    return def_line, f.body.end[0] + 1


def is_written(lines: list[str], name: str, first: int, last: int) -> bool:
    """Whether pointer ``name`` is stored through (``name[..] =``, ``*name =``, ``name[..] +=``, atomics)
    or handed on (to a call, a non-const copy) on 1-based lines ``first``..``last``."""
    src = cuda_source.parse_lines(lines)
    return src.written_through(name, (first - 1, 0), (last, 0))


def derived_pointers(lines: list[str], name: str, first: int, last: int) -> tuple[str, ...]:
    """Local pointers initialised from ``name`` (by an offset or a cast) on 1-based lines ``first``..``last``."""
    return cuda_source.parse_lines(lines).derived_pointers(name, (first - 1, 0), (last, 0))


@dataclass(frozen=True)
class SourceLoop:
    line: int                 # 1-based line of the ``for``/``while``/``do`` keyword
    first: int                # body: first and last line (inclusive)
    last: int
    pragma: str | None        # text of a ``#pragma unroll...`` right above, if any


def source_loops(lines: list[str]) -> list[SourceLoop]:
    """Loops of a C/C++ file (from the syntax tree: comments, strings and macros are no loops)."""
    return [frozen_new(SourceLoop, line=lp.line + 1, first=lp.body_start[0] + 1, last=lp.body_end[0] + 1,
                       pragma=lp.pragma.text if lp.pragma else None)       # SourceLoop(...), gpa_lsp/frozen.py
            for lp in cuda_source.parse_lines(lines).loops]


def loops_around(lines: list[str], line: int) -> list[SourceLoop]:
    """Source loops whose body holds ``line`` (or whose header is on it), outermost first."""
    got = [lp for lp in source_loops(lines) if lp.line <= line <= lp.last]
    return sorted(got, key=lambda lp: (lp.line, -lp.last))
