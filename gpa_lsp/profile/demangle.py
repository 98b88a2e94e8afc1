"""Kernel and function names, in one place: demangling and the short names read from it.

- :func:`demangle_all`: mangled -> demangled names (a profile's kernels), the name
  itself when c++filt is missing or fails.
- :func:`demangle_symbols`: the same for a cubin's symbols, which may be
  ``$``-qualified (``$<kernel>$<callee>``: a callee copied into a kernel's
  section); empty when c++filt is missing or fails.
- :func:`base_name`: the qualified name a demangled signature declares
  (``void ns::k<int>(int)`` -> ``ns::k<int>``): how profiles and programs are matched.
- :func:`bare_name`: the C++ identifier of a mangled or demangled name
  (``_Z7stencilPKfPfi`` -> ``stencil``): how a fix finds the function in the source.
- :func:`display_name`: the short name the reports show (``calculate_temp``, ``k<...>``).
- :func:`qualified_name` / :func:`unqualified_name`: a name cut at its parameter
  list / and at its last ``::`` (no demangling; a mangled name stays as it is).

Demangling runs c++filt (binutils), or cu++filt, when one is on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Iterable

from .. import procs


def _filter(names: list[str]) -> dict[str, str] | None:
    """c++filt over ``names`` (sorted, unique, not empty): name -> demangled, None when it cannot run."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool:
        return None
    try:
        proc = procs.run_tool([tool], input="\n".join(names) + "\n", timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(names):
        return None
    return dict(zip(names, lines))


def demangle_all(names: Iterable[str]) -> dict[str, str]:
    names = sorted(set(names))
    table = _filter(names) if names else None
    return table if table is not None else {n: n for n in names}


def demangle_symbols(names: list[str]) -> dict[str, str]:
    """Demangled cubin symbols; ``$<kernel>$<callee>`` reads ``callee(...) [in kernel(...)]``."""
    pieces = sorted({piece for n in names for piece in n.split("$") if piece})
    table = _filter(pieces) if pieces else None
    if table is None:
        return {}
    out = {}
    for n in names:
        parts = [x for x in n.split("$") if x]
        if len(parts) >= 2 and n.startswith("$") and parts[0].startswith("_Z"):
            # $<kernel>$<callee>: a callee copied into a kernel's section
            out[n] = f"{table.get(parts[-1], parts[-1])} [in {table.get(parts[0], parts[0])}]"
        elif parts:
            out[n] = table.get(parts[-1], parts[-1])
    return out


def base_name(demangled: str) -> str:
    """``stencil(const float *, int)`` -> ``stencil``; ``void ns::k<int>(int)`` -> ``ns::k<int>``."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch in "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            demangled = demangled[:i]
            break
    head = demangled.strip()
    if " " in head and not head.endswith(">"):
        head = head.rsplit(" ", 1)[-1]
    return head


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


def display_name(signature: str) -> str:
    """A kernel as the reports name it: ``calculate_temp`` for ``calculate_temp(float const*, ...)``
    (no return type ``void``), template arguments longer than the name elided (``k<...>``)."""
    depth = 0
    cut = len(signature)
    for i, ch in enumerate(signature):
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    name = signature[:cut].strip()
    if name.startswith("void "):
        name = name[5:]
    if len(name) > 48 and "<" in name:
        name = name[:name.index("<")] + "<...>"
    return name


def qualified_name(name: str) -> str:
    """``ns::k(int)`` -> ``ns::k``: the text before the first ``(`` (a template's return type stays)."""
    return name.split("(")[0]


def unqualified_name(name: str) -> str:
    """``ns::k(int)`` -> ``k``: :func:`qualified_name` after its last ``::``, stripped. Unlike
    :func:`bare_name` it does not demangle and keeps template arguments (``void k<int>(int)`` ->
    ``void k<int>``)."""
    return qualified_name(name).split("::")[-1].strip()
