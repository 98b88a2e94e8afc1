"""Reading the user's sources for fixes: never fails, a missing file just gives no fix.

Also the small scanners that find what a fix edits: double literals, literal
launch configurations, kernel parameter lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

LineReader = Callable[[str], "list[str] | None"]


def mapped_path(path: str, source_map: Sequence[tuple[str, str]] = (), root: str | None = None) -> str:
    """Apply ``OLD=NEW`` prefixes (longest first); a relative NEW is taken from ``root``."""
    for old, new in sorted(source_map, key=lambda kv: len(kv[0]), reverse=True):
        if old and (path == old or path.startswith(old.rstrip("/") + "/")):
            rest = path[len(old.rstrip("/")):].lstrip("/")
            base = Path(new)
            if not base.is_absolute() and root:
                base = Path(root) / base
            return str((base / rest).resolve()) if rest else str(base.resolve())
    return path


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
        target = mapper(path) if mapper else mapped_path(path, source_map, root)
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


_DOUBLE_LITERAL = re.compile(
    r"(?<![\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")


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
    """0-based [start, end) columns of floating literals with no ``f``/``F`` suffix (doubles)."""
    mask = _code_mask(text)
    out = []
    for m in _DOUBLE_LITERAL.finditer(text):
        s, e = m.span(1)
        if not mask[s]:
            continue
        if e < len(text) and text[e] in "fFlL":
            continue
        out.append((s, e))
    return out


_LAUNCH = re.compile(r"<<<\s*([^,<>]+?)\s*,\s*([^,<>]+?)\s*(?:,[^<>]*)?>>>")
_DIM3 = re.compile(r"\bdim3\s+(\w+)\s*[({]\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?[)}]")


@dataclass(frozen=True)
class LaunchSite:
    file: str
    line: int
    kernel: str
    current: int              # threads per block
    columns: tuple[int, int]  # the literal (or the dim3's arguments) to rewrite
    dims: tuple[int, ...] = ()


def launch_sites(path: str, lines: list[str], kernel: str) -> list[LaunchSite]:
    """Launches of ``kernel`` whose block size is a literal or a ``dim3`` of literals in the same file."""
    dims: dict[str, tuple[int, tuple[int, int], tuple[int, ...]]] = {}
    for ln in lines:
        for m in _DIM3.finditer(ln):
            vals = tuple(int(v) for v in m.groups()[1:] if v)
            prod = 1
            for v in vals:
                prod *= v
            dims[m.group(1)] = (prod, (m.start(2), m.end(m.lastindex or 2)), vals)
    out = []
    for no, ln in enumerate(lines, 1):
        for m in re.finditer(r"\b" + re.escape(kernel) + r"\s*<<<", ln):
            lm = _LAUNCH.search(ln, m.start())
            if not lm:
                continue
            block = lm.group(2).strip()
            if block.isdigit():
                out.append(LaunchSite(path, no, kernel, int(block), lm.span(2), (int(block),)))
            elif block in dims:
                prod, cols, vals = dims[block]
                out.append(LaunchSite(path, no, kernel, prod, lm.span(2), vals))
    return out


def find_function(lines: list[str], name: str) -> int | None:
    """1-based line of the definition of ``name`` (a ``__global__``/``__device__`` function)."""
    pat = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    for no, ln in enumerate(lines, 1):
        if pat.search(ln) and ("__global__" in ln or "__device__" in ln
                               or (no > 1 and ("__global__" in lines[no - 2] or "__device__" in lines[no - 2]))):
            return no
    return None


def pointer_parameters(lines: list[str], def_line: int) -> list[tuple[str, str]]:
    """(name, declaration) of pointer parameters in the signature starting at ``def_line``."""
    text = []
    depth = 0
    started = False
    for ln in lines[def_line - 1: def_line + 15]:
        for ch in ln:
            if ch == "(":
                depth += 1
                started = True
                if depth == 1:
                    continue
            elif ch == ")":
                depth -= 1
                if started and depth == 0:
                    break
            if started and depth >= 1:
                text.append(ch)
        if started and depth == 0:
            break
        text.append(" ")
    params = []
    for decl in "".join(text).split(","):
        decl = decl.strip()
        if "*" not in decl:
            continue
        m = re.search(r"(\w+)\s*(?:\[\s*\])?$", decl)
        if m:
            params.append((m.group(1), decl))
    return params


def body_range(lines: list[str], def_line: int) -> tuple[int, int]:
    """1-based inclusive lines of the function body that starts at ``def_line`` (brace matching)."""
    depth = 0
    opened = False
    for no in range(def_line, len(lines) + 1):
        for ch in lines[no - 1]:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return def_line, no
    return def_line, len(lines)


def is_written(lines: list[str], name: str, first: int, last: int) -> bool:
    """Whether ``name`` is stored through (``name[..] =``, ``*name =``, ``name[..] +=``) or passed on."""
    store = re.compile(r"(?:\b" + re.escape(name) + r"\s*\[[^\]]*\]|\*\s*\(?\s*" + re.escape(name)
                       + r"\b[^=;]*?)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")
    atomic = re.compile(r"\batomic\w*\s*\(\s*&?\s*" + re.escape(name) + r"\b")
    for no in range(first, last + 1):
        ln = lines[no - 1]
        if store.search(ln) or atomic.search(ln):
            return True
    return False


@dataclass(frozen=True)
class SourceLoop:
    line: int                 # 1-based line of the ``for``/``while``/``do`` keyword
    first: int                # body: first and last line (inclusive)
    last: int
    pragma: str | None        # text of a ``#pragma unroll...`` right above, if any


_LOOP_KW = re.compile(r"\b(for|while|do)\b")


def source_loops(lines: list[str]) -> list[SourceLoop]:
    """Loops of a C/C++ file, found by keyword and brace/parenthesis matching (comments skipped).

    Good enough for finding which loop a line belongs to; not a parser: a
    ``while`` that closes a ``do`` is not reported twice because its body is empty.
    """
    text_lines = ["".join(ch if m else " " for ch, m in zip(ln, _code_mask(ln))) for ln in lines]
    out: list[SourceLoop] = []
    n = len(text_lines)
    for no, ln in enumerate(text_lines, 1):
        for m in _LOOP_KW.finditer(ln):
            kw = m.group(1)
            r, c = no, m.end()
            if kw != "do":
                end = _match_close(text_lines, r, c, "(", ")")
                if end is None:
                    continue
                r, c = end
            body = _statement_end(text_lines, r, c)
            if body is None:
                continue
            (br, bc), (er, ec) = body
            if kw == "while" and br == er and text_lines[br - 1][bc:ec + 1].strip() in (";", ""):
                continue  # the tail of a do-while
            pragma = None
            k = no - 1
            while k >= 1 and not text_lines[k - 1].strip() and lines[k - 1].strip().startswith("//"):
                k -= 1
            if k >= 1 and re.match(r"\s*#\s*pragma\s+unroll", lines[k - 1]):
                pragma = lines[k - 1].strip()
            out.append(SourceLoop(no, br, er, pragma))
    return out


def _match_close(lines, r, c, op, cl):
    """(row, col) just after the bracket closing the first ``op`` at/after (r, c)."""
    depth = 0
    started = False
    while r <= len(lines):
        ln = lines[r - 1]
        while c < len(ln):
            ch = ln[c]
            if ch == op:
                depth += 1
                started = True
            elif ch == cl and started:
                depth -= 1
                if depth == 0:
                    return r, c + 1
            elif not started and not ch.isspace():
                return None
            c += 1
        r, c = r + 1, 0
    return None


def _statement_end(lines, r, c):
    """((row, col) of the body's first character, (row, col) of its last) of the statement at (r, c)."""
    while r <= len(lines):
        ln = lines[r - 1]
        while c < len(ln) and ln[c].isspace():
            c += 1
        if c < len(ln):
            break
        r, c = r + 1, 0
    else:
        return None
    start = (r, c)
    if lines[r - 1][c] == "{":
        end = _match_close(lines, r, c, "{", "}")
        return (start, (end[0], end[1] - 1)) if end else None
    # a single statement (possibly a nested loop or if): ends at the first ';' at depth 0
    depth = 0
    while r <= len(lines):
        ln = lines[r - 1]
        while c < len(ln):
            ch = ln[c]
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == ";" and depth == 0:
                return start, (r, c)
            c += 1
        r, c = r + 1, 0
    return None


def loops_around(lines: list[str], line: int) -> list[SourceLoop]:
    """Source loops whose body holds ``line`` (or whose header is on it), outermost first."""
    got = [lp for lp in source_loops(lines) if lp.line <= line <= lp.last]
    return sorted(got, key=lambda lp: (lp.line, -lp.last))
