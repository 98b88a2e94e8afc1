"""`gpa disasm`: text and the JSON schema of docs/disasm-json.md."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from gpa_lsp.cli import main
from gpa_lsp.sass import load_programs

from .kernels import NESTED, line_of

INS_KEYS = {"offset", "opcode", "operands", "predicate", "dsts", "srcs", "file", "line", "inline", "control"}
FN_KEYS = {"name", "demangled", "section", "entry", "start", "size", "registers", "frame_size", "stack_size",
           "max_threads", "barriers", "shared_static", "callees", "instructions", "blocks", "edges", "loops"}


def test_disasm_json_schema(nested_cubin, capsys):
    assert main(["disasm", str(nested_cubin), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["sm"] in (80, 90) and len(doc["cubin_sha256"]) == 64
    names = [f["name"] for f in doc["functions"]]
    assert "_Z6nestedPKfPfii" in names and "_Z5twicePdPKfPfi" in names
    for f in doc["functions"]:
        assert set(f) == FN_KEYS
        assert isinstance(f["entry"], bool) and isinstance(f["registers"], int)
        for ins in f["instructions"]:
            assert INS_KEYS <= set(ins)
            assert set(ins["control"]) == {"stall", "yield", "write_barrier", "read_barrier", "wait_mask", "reuse"}
            assert isinstance(ins["line"], int) and ins["file"].endswith("nested.cu")
            assert all(set(s) == {"file", "line"} for s in ins["inline"])
        for lp in f["loops"]:
            assert {"header", "line", "depth", "parent", "file", "line_range", "blocks"} == set(lp)
    k = next(f for f in doc["functions"] if f["name"] == "_Z6nestedPKfPfii")
    inner = next(lp for lp in k["loops"] if lp["line"] == line_of(NESTED, "inner"))
    assert inner["depth"] == 2 and inner["parent"] in [lp["header"] for lp in k["loops"]]


def test_disasm_text_and_kernel_filter(nested_cubin, capsys):
    assert main(["disasm", str(nested_cubin), "--kernel", "twice"]) == 0
    out = capsys.readouterr().out
    assert "twice(double*" in out and "nested(" not in out
    assert "LDG.E.64" in out and ":S" in out
    assert main(["disasm", str(nested_cubin), "--kernel", "nope"]) == 2
    assert "no function matches" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("g++") is None, reason="nvcc needs a host compiler to link an executable")
def test_load_programs_from_executable(tmp_path):
    from gpa_lsp.toolchain import find_tool
    src = tmp_path / "app.cu"
    src.write_text(NESTED + "\nint main() { return 0; }\n")
    exe = tmp_path / "app"
    subprocess.run([find_tool("nvcc"), "-lineinfo", "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_90,code=sm_90", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    programs = load_programs(exe)
    assert sorted(p.sm for p in programs) == [80, 90]
    for p in programs:
        assert p.function("_Z6nestedPKfPfii") is not None and p.path.startswith(str(exe) + "#")
