from __future__ import annotations

import pytest

from gpa_lsp.errors import CubinError
from gpa_lsp.sass import load_program, load_programs

from .kernels import NESTED


def test_truncated_cubin(build_cubin, tmp_path):
    data = build_cubin(NESTED, arch="sm_90", name="nested").read_bytes()
    cut = tmp_path / "cut.cubin"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(CubinError) as exc:
        load_program(cut)
    assert "truncated" in exc.value.message and exc.value.hint
    with pytest.raises(CubinError, match="truncated"):
        load_program(data[:40 + len(data) // 3])


def test_non_elf_file(tmp_path):
    f = tmp_path / "notes.cubin"
    f.write_text("this is not a cubin\n" * 10)
    with pytest.raises(CubinError) as exc:
        load_program(f)
    assert "not a cubin" in exc.value.message and exc.value.hint
    with pytest.raises(CubinError):
        load_programs(f)
    with pytest.raises(CubinError, match="does not exist"):
        load_program(tmp_path / "missing.cubin")


def test_host_elf_is_refused_by_load_program():
    with pytest.raises(CubinError, match="not a CUDA cubin"):
        load_program("/bin/ls")
