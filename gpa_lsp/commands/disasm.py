"""`gpa disasm PATH [--kernel NAME] [--json]`: the SASS program as gpa-lsp sees it.

Text: per function its instructions with source line, control code and the
innermost loop holding them. JSON: the schema in docs/disasm-json.md.
"""

from __future__ import annotations

import json
import sys

from ..errors import GpaError
from ..sass import load_programs
from ..sass.model import Function, Instruction, Program

SCHEMA_VERSION = 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("disasm", help="disassemble a cubin or executable with lines, control codes, loops")
    p.add_argument("path", help="a .cubin, or an executable / fatbin embedding cubins")
    p.add_argument("--kernel", help="only functions whose mangled or demangled name contains NAME")
    p.add_argument("--json", action="store_true", help="machine-readable output (docs/disasm-json.md)")
    p.set_defaults(func=run)


def _selected(fn: Function, kernel: str | None) -> bool:
    return kernel is None or kernel == fn.name or kernel in fn.name or kernel in fn.demangled


def instruction_json(ins: Instruction) -> dict:
    out = {
        "offset": ins.offset,
        "opcode": ins.opcode,
        "operands": list(ins.operands),
        "predicate": (("!" if ins.predicate_negated else "") + ins.predicate) if ins.predicate else None,
        "dsts": sorted(ins.dsts),
        "srcs": sorted(ins.srcs),
        "file": ins.loc.file if ins.loc else None,
        "line": ins.loc.line if ins.loc else None,
        "inline": [{"file": s.file, "line": s.line} for s in ins.inline],
        "control": ins.control.to_json() if ins.control else None,
        "text": ins.text,
    }
    if ins.memory is not None:
        m = ins.memory
        out["memory"] = {"space": m.space, "width": m.width, "load": m.load, "store": m.store, "atomic": m.atomic}
    if ins.branch_target is not None:
        out["branch_target"] = ins.branch_target
    if ins.call_target is not None:
        out["call_target"] = ins.call_target
    return out


def function_json(fn: Function) -> dict:
    return {
        "name": fn.name,
        "demangled": fn.demangled,
        "section": fn.section,
        "entry": fn.entry,
        "start": fn.start,
        "size": fn.size,
        "registers": fn.registers,
        "frame_size": fn.frame_size,
        "stack_size": fn.stack_size,
        "max_threads": fn.max_threads,
        "barriers": fn.barriers,
        "shared_static": fn.shared_static,
        "callees": list(fn.callees),
        "instructions": [instruction_json(i) for i in fn.instructions],
        "blocks": [{"start": b.start, "end": b.end} for b in fn.blocks],
        "edges": [{"src": e.src, "dst": e.dst, "kind": e.kind} for e in fn.edges],
        "loops": [{"header": lp.header, "file": lp.file, "line": lp.line, "depth": lp.depth, "parent": lp.parent,
                   "line_range": list(lp.line_range) if lp.line_range else None,
                   "blocks": sorted(lp.blocks)} for lp in fn.loops],
    }


def program_json(program: Program, kernel: str | None = None) -> dict:
    return {
        "schema": SCHEMA_VERSION,
        "path": program.path,
        "cubin_sha256": program.cubin_sha256,
        "sm": program.sm,
        "functions": [function_json(f) for f in program.functions if _selected(f, kernel)],
    }


def _ctrl_text(ins: Instruction) -> str:
    c = ins.control
    if c is None:
        return ""
    wb = "-" if c.write_barrier is None else str(c.write_barrier)
    rb = "-" if c.read_barrier is None else str(c.read_barrier)
    wait = "".join(str(i) if c.wait_mask >> i & 1 else "-" for i in range(6))
    return f"B{wait}:R{rb}:W{wb}:{'Y' if c.yield_ else '-'}:S{c.stall:02d}"


def _innermost_loops(fn: Function) -> dict[int, int]:
    """Block start -> header of the innermost loop holding it."""
    out: dict[int, tuple[int, int]] = {}
    for lp in fn.loops:
        for b in lp.blocks:
            if b not in out or out[b][0] < lp.depth:
                out[b] = (lp.depth, lp.header)
    return {b: h for b, (_, h) in out.items()}


def print_text(program: Program, kernel: str | None, out) -> None:
    print(f"// {program.path or '<bytes>'}  sm_{program.sm}  sha256 {program.cubin_sha256[:12]}", file=out)
    for fn in program.functions:
        if not _selected(fn, kernel):
            continue
        kind = "kernel" if fn.entry else "device function"
        print(f"\n// {kind} {fn.demangled or fn.name}  [{fn.name}]", file=out)
        print(f"//   section {fn.section} +0x{fn.start:x}, {fn.size} bytes, {fn.registers} registers, "
              f"frame {fn.frame_size}, shared {fn.shared_static}, barriers {fn.barriers}"
              + (f", max threads {fn.max_threads}" if fn.max_threads else ""), file=out)
        loops = {lp.header: lp for lp in fn.loops}
        for lp in fn.loops:
            print(f"//   loop @0x{lp.header:04x} line {lp.line} depth {lp.depth}"
                  + (f" parent @0x{lp.parent:04x}" if lp.parent is not None else "")
                  + (f" lines {lp.line_range[0]}-{lp.line_range[1]}" if lp.line_range else ""), file=out)
        inner = _innermost_loops(fn)
        block_of = {}
        for b in fn.blocks:
            for off in b.instructions:
                block_of[off] = b.start
        last_loc = None
        for ins in fn.instructions:
            loc_key = (ins.loc, ins.inline)
            if loc_key != last_loc and ins.loc is not None:
                chain = "".join(f" <- {s.file.rsplit('/', 1)[-1]}:{s.line}" for s in ins.inline)
                print(f"        // {ins.loc.file}:{ins.loc.line}{chain}", file=out)
                last_loc = loc_key
            h = inner.get(block_of.get(ins.offset, -1))
            loop = f"L{loops[h].depth}@{h:04x}" if h is not None else ""
            print(f"  /*{ins.offset:04x}*/ {_ctrl_text(ins):<22} {loop:<10} {ins.text}", file=out)


def run(args) -> int:
    programs = load_programs(args.path)
    if args.kernel and not any(_selected(f, args.kernel) for p in programs for f in p.functions):
        names = sorted({f.name for p in programs for f in p.functions if f.entry})
        raise GpaError(f"no function matches --kernel {args.kernel}", "kernels: " + ", ".join(names[:20]))
    if args.json:
        doc = [program_json(p, args.kernel) for p in programs]
        json.dump(doc[0] if len(doc) == 1 else {"schema": SCHEMA_VERSION, "programs": doc}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for p in programs:
            print_text(p, args.kernel, sys.stdout)
    return 0
