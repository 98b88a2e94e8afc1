"""Run nvdisasm once per cubin and parse its text.

One pass of ``nvdisasm -c -gi`` gives everything the JSON form lacks:
offsets, labels (branch targets), symbols inside sections (non-inlined
callees), source lines and inline chains. Control codes come from the ELF
bytes (control.py). The text form is also the faster one to parse: a line is
classified by its first characters, and only instruction lines are split.

A ``-gi`` line annotation looks like::

    //## File "/a/k.cu", line 2 inlined at "/a/k.cu", line 5
    //## File "/a/k.cu", line 5 inlined at "/a/k.cu", line 12
    //## File "/a/k.cu", line 12
            /*0070*/                   FFMA R0, R0, R0, 3 ;

The first line of a group is the instruction's own location and its first
call site; each further line adds the next call site outwards. nvdisasm
prints a group only when the location changes, so it stays in force for
the instructions that follow (as with ``-g``).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import procs
from ..errors import CubinError
from ..toolchain import find_tool, tool_env
from .model import SourceLoc

_FILE_RE = re.compile(r'File "(.*?)", line (\d+)(?: inlined at "(.*?)", line (\d+))?')


@dataclass
class RawInstruction:
    offset: int
    predicate: str | None        # guard with "!" stripped; None when absent or PT
    negated: bool
    opcode: str
    operands: str                # raw operand text (comma separated)
    text: str
    loc: SourceLoc | None
    inline: tuple[SourceLoc, ...]


@dataclass
class RawSection:
    name: str
    instructions: list[RawInstruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)   # .L_x_N and symbols -> offset


def run_nvdisasm(path: str | Path, *, inline: bool = True, timeout: float | None = None) -> str:
    """``nvdisasm -c -gi`` (or ``-g``) on a cubin file; CubinError when nvdisasm rejects it or does not
    finish within ``timeout`` (default: sized to the file, ``procs.tool_timeout``)."""
    path = procs.safe_path(path)
    if timeout is None:
        try:
            timeout = procs.tool_timeout(os.path.getsize(path))
        except OSError:
            timeout = procs.tool_timeout(0)
    argv = [find_tool("nvdisasm"), "-c", "-gi" if inline else "-g", path]
    try:
        proc = procs.run_tool(argv, timeout=timeout, env=tool_env())
    except subprocess.TimeoutExpired:
        # a damaged cubin can make nvdisasm loop forever (issue 16); it was killed
        raise CubinError(f"nvdisasm did not finish disassembling {path} within {timeout:.0f} s and was stopped",
                         "the cubin is probably damaged: rebuild it, or record the bundle again") from None
    if proc.returncode != 0:
        raise CubinError(f"nvdisasm could not disassemble {path}: {(proc.stderr or proc.stdout).strip()[:500]}",
                         "check that the file is a complete cubin for sm_75 or newer")
    return proc.stdout


def parse(text: str) -> dict[str, RawSection]:
    """Sections of nvdisasm text output, keyed by section name."""
    sections: dict[str, RawSection] = {}
    cur: RawSection | None = None
    pending_labels: list[str] = []
    loc: SourceLoc | None = None
    inline: tuple[SourceLoc, ...] = ()
    in_group = False
    group_inline: list[SourceLoc] = []
    locs: dict[tuple[str, int], SourceLoc] = {}
    chains: dict[tuple[SourceLoc, ...], tuple[SourceLoc, ...]] = {}

    def mkloc(f: str, line: str) -> SourceLoc:
        key = (f, int(line))
        s = locs.get(key)
        if s is None:
            s = locs[key] = SourceLoc(f, int(line))
        return s

    for raw in text.splitlines():
        s = raw.lstrip()
        if not s:
            continue
        c0 = s[0]
        if c0 == "/":
            if s.startswith("/*"):
                end = s.find("*/")
                if end < 0 or cur is None:
                    continue
                try:
                    off = int(s[2:end], 16)
                except ValueError:
                    continue
                body = s[end + 2:].strip()
                if body.endswith(";"):
                    body = body[:-1].rstrip()
                full = body
                if in_group:
                    t = tuple(group_inline)
                    inline = chains.setdefault(t, t)
                    in_group = False
                pred = None
                neg = False
                if body[:1] == "@":
                    sp = body.find(" ")
                    g = body[1:sp]
                    body = body[sp + 1:].lstrip()
                    if g[:1] == "!":
                        neg, g = True, g[1:]
                    if g not in ("PT", "UPT"):
                        pred = g
                    else:
                        neg = False
                sp = body.find(" ")
                if sp < 0:
                    opcode, ops = body, ""
                else:
                    opcode, ops = body[:sp], body[sp + 1:].strip()
                if pending_labels:
                    for lab in pending_labels:
                        cur.labels[lab] = off
                    pending_labels.clear()
                cur.instructions.append(RawInstruction(off, pred, neg, opcode, ops, full, loc, inline))
            elif s.startswith("//##"):
                m = _FILE_RE.search(s)
                if m is None:
                    continue
                if not in_group:
                    in_group = True
                    loc = mkloc(m.group(1), m.group(2)) if m.group(2) != "0" else None
                    group_inline = []
                if m.group(3) is not None:
                    group_inline.append(mkloc(m.group(3), m.group(4)))
            elif s.startswith("//-----") and ".text." in s:
                name = s.strip("/- \t")
                cur = sections.setdefault(name, RawSection(name))
                pending_labels.clear()
                loc, inline, in_group = None, (), False
        elif c0 == ".":
            if s.startswith((".section\t", ".section ")):
                name = s.split(None, 1)[1].split(",", 1)[0].strip()
                if name.startswith(".text."):
                    if cur is None or cur.name != name:
                        cur = sections.setdefault(name, RawSection(name))
                        loc, inline, in_group = None, (), False
                else:
                    cur = None
            elif s.endswith(":") and cur is not None:
                pending_labels.append(s[:-1])
        elif s.endswith(":") and cur is not None and " " not in s:
            pending_labels.append(s[:-1])   # symbol labels such as $kernel$callee:
    return sections
