"""Demangle C++ kernel names with c++filt (binutils) when it is there; else keep the name."""

from __future__ import annotations

import shutil
import subprocess
from typing import Iterable


def demangle_all(names: Iterable[str]) -> dict[str, str]:
    names = sorted(set(names))
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30)
        lines = proc.stdout.splitlines()
        if proc.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    except (OSError, subprocess.SubprocessError):
        pass
    return {n: n for n in names}


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
