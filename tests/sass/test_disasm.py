"""Instructions, operands, control codes and lines, checked against nvdisasm's own output."""

from __future__ import annotations

import json
import re
import subprocess

from gpa_lsp.sass import load_program
from gpa_lsp.toolchain import find_tool

from .kernels import NESTED


def _nvdisasm(*args) -> str:
    return subprocess.run([find_tool("nvdisasm"), *map(str, args)], capture_output=True, text=True,
                          check=True).stdout


def _by_section(program):
    out = {}
    for f in program.functions:
        out.setdefault(f.section, []).extend(f.instructions)
    for v in out.values():
        v.sort(key=lambda i: i.offset)
    return out


def test_instructions_equal_nvdisasm_json(nested_cubin, nested_program):
    doc = json.loads(_nvdisasm("-json", nested_cubin))
    ours = _by_section(nested_program)
    assert {".text." + f["function-name"] for f in doc[1]} == set(ours)
    total = 0
    for f in doc[1]:
        theirs = f["sass-instructions"]
        mine = ours[".text." + f["function-name"]]
        assert len(mine) == len(theirs) == f["length"] // 16
        for k, (a, b) in enumerate(zip(mine, theirs)):
            assert a.offset == f["start"] + 16 * k
            assert a.opcode == b["opcode"], (a.offset, a.text)
            pred = b.get("predicate")
            if pred in (None, "PT", "@PT"):
                assert a.predicate is None
            else:
                assert pred.lstrip("@") == ("!" if a.predicate_negated else "") + a.predicate
        total += len(mine)
    assert total > 100


_G_FILE = re.compile(r'//## File "(.*?)", line (\d+)')
_G_INS = re.compile(r"/\*([0-9a-f]{4,})\*/")


def test_lines_equal_nvdisasm_g_for_every_instruction(nested_cubin, nested_program):
    """Independent reading of `nvdisasm -g`: the last File comment before an instruction holds."""
    expected: dict[tuple[str, int], tuple[str, int] | None] = {}
    section, cur = None, None
    for line in _nvdisasm("-c", "-g", nested_cubin).splitlines():
        if line.split()[:1] == [".section"]:
            section, cur = line.split()[1].split(",")[0], None
        m = _G_FILE.search(line)
        if m:
            cur = (m.group(1), int(m.group(2)))
            continue
        m = _G_INS.search(line)
        if m and section:
            expected[(section, int(m.group(1), 16))] = cur
    got = {(f.section, i.offset): ((i.loc.file, i.loc.line) if i.loc else None)
           for f in nested_program.functions for i in f.instructions}
    assert len(got) == len(expected) > 100
    assert got == expected
    assert all(v is not None and v[0].endswith("nested.cu") for v in got.values())


def _kernel(program, name):
    return next(f for f in program.functions if f.name == name)


def test_global_load_write_barrier_is_waited_on_by_its_consumer(nested_program):
    checked = 0
    for f in nested_program.functions:
        ins = f.instructions
        for k, ld in enumerate(ins):
            if not (ld.memory and ld.memory.space == "global" and ld.memory.load and ld.dsts):
                continue
            wb = ld.control.write_barrier
            assert wb is not None, ld.text
            # the first later instruction in the same block that reads the loaded register
            blk = next(b for b in f.blocks if ld.offset in b.instructions)
            for use in ins[k + 1:]:
                if use.offset not in blk.instructions:
                    break
                if use.srcs & ld.dsts:
                    assert use.control.wait_mask >> wb & 1, (ld.text, use.text)
                    checked += 1
                    break
    assert checked >= 2


def test_predicated_definitions(build_cubin, arch):
    program = load_program(build_cubin(NESTED, arch=arch, name="nested"))
    twice = _kernel(program, "_Z5twicePdPKfPfi")
    preds = [i for i in twice.instructions if i.predicate and i.dsts]
    assert preds, "expected a predicated definition (if-converted select or guarded load)"
    for i in preds:
        assert i.predicate in i.srcs
        assert i.text.startswith(("@!" if i.predicate_negated else "@") + i.predicate + " ")
    guarded_exit = [i for i in twice.instructions if i.base_opcode == "EXIT" and i.predicate]
    setp = [i for i in twice.instructions if i.base_opcode in ("ISETP", "FSETP")]
    assert guarded_exit or setp
    assert all(any(d.startswith("P") for d in i.dsts) for i in setp)


def test_64bit_addresses_and_data_are_register_pairs(nested_program):
    twice = _kernel(nested_program, "_Z5twicePdPKfPfi")
    ldg64 = next(i for i in twice.instructions if i.opcode.startswith("LDG") and ".64" in i.opcode)
    addr = re.search(r"\[R(\d+)\.64", ldg64.text)
    n = int(addr.group(1))
    assert {f"R{n}", f"R{n + 1}"} <= ldg64.srcs
    d = int(ldg64.operands[0][1:])
    assert ldg64.dsts == {f"R{d}", f"R{d + 1}"}
    assert ldg64.memory.width == 64 and ldg64.memory.space == "global"
    dadd = next(i for i in twice.instructions if i.base_opcode in ("DADD", "DMUL"))
    assert len(dadd.dsts) == 2
    stg = next(i for i in twice.instructions if i.opcode.startswith("STG") and ".64" in i.opcode)
    assert not stg.dsts
    data = int(stg.operands[-1][1:])
    assert {f"R{data}", f"R{data + 1}"} <= stg.srcs
    assert stg.memory.store and not stg.memory.load


def test_memory_spaces_and_constants(nested_program):
    k = _kernel(nested_program, "_Z6nestedPKfPfii")
    spaces = {(i.base_opcode, i.memory.space) for i in k.instructions if i.memory}
    assert ("STS", "shared") in spaces and ("LDS", "shared") in spaces
    assert ("LDG", "global") in spaces and ("STG", "global") in spaces
    c = [i for i in k.instructions if i.cbank]
    assert c and all(bank == 0 for i in c for bank, _ in i.cbank)
    bar = next(i for i in k.instructions if i.base_opcode == "BAR")
    assert bar.memory is None and not bar.dsts


def test_control_codes_decode_from_elf_bytes(nested_cubin, nested_program):
    """Control code bits read straight from the section bytes for one instruction, by hand."""
    from elftools.elf.elffile import ELFFile
    with open(nested_cubin, "rb") as fh:
        sec = ELFFile(fh).get_section_by_name(".text._Z6nestedPKfPfii").data()
    k = _kernel(nested_program, "_Z6nestedPKfPfii")
    for ins in k.instructions[:40]:
        hi = int.from_bytes(sec[ins.offset + 8: ins.offset + 16], "little")
        assert ins.control.stall == (hi >> 41) & 0xF
        wb = (hi >> 46) & 7
        assert ins.control.write_barrier == (None if wb == 7 else wb)
        assert ins.control.wait_mask == (hi >> 52) & 0x3F
    assert any(i.control.write_barrier is not None for i in k.instructions)


def test_function_attributes(nested_program, arch):
    k = _kernel(nested_program, "_Z6nestedPKfPfii")
    t = _kernel(nested_program, "_Z5twicePdPKfPfi")
    assert k.entry and t.entry
    assert t.max_threads == 128 and k.max_threads is None
    assert k.barriers == 1
    assert k.shared_static >= 1024          # tile[256] floats
    assert 8 <= k.registers <= 255 and 4 <= t.registers <= 255
    assert nested_program.sm == int(arch[3:])
    assert k.demangled.startswith("nested(")


def test_load_program_is_cached_by_content(nested_cubin):
    a = load_program(nested_cubin)
    b = load_program(nested_cubin.read_bytes())
    assert a is b
    assert len(a.cubin_sha256) == 64


def test_fast_built_instructions_equal_dataclass_construction(nested_program):
    import dataclasses

    from functools import cached_property

    from gpa_lsp.sass.model import Instruction
    # values a cached_property (base_opcode) stored once asked: derived, not state
    cached = {name for name, v in vars(Instruction).items() if isinstance(v, cached_property)}
    for f in nested_program.functions:
        for ins in f.instructions:
            fields = {fl.name: getattr(ins, fl.name) for fl in dataclasses.fields(Instruction)}
            assert Instruction(**fields) == ins
            assert set(vars(ins)) - cached == set(fields)
            for name in cached:
                assert getattr(ins, name) == getattr(Instruction(**fields), name)
