"""What a user meets on a wrong argument to `gpa disasm|analyze|advise`: a message and a hint, exit 2, no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpa_lsp.cli import main

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _fails(capsys, argv: list[str], *needles: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpa: error: ") and "gpa: hint: " in err and "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)
    return err


def test_disasm_missing_folder_text_and_random_bytes(tmp_path, capsys):
    _fails(capsys, ["disasm", str(tmp_path / "missing.cubin")], "missing.cubin does not exist")
    _fails(capsys, ["disasm", str(tmp_path)], "is a folder, not a cubin")
    text = tmp_path / "notes.txt"
    text.write_text("not a cubin\n")
    _fails(capsys, ["disasm", str(text)], "neither a cubin nor an executable")


def test_analyze_corrupt_missing_and_folder(tmp_path, capsys):
    bad = tmp_path / "bad.gpabundle"
    bad.write_bytes(b"PK\x03\x04 truncated")
    _fails(capsys, ["analyze", str(bad)], "not a gpa bundle")
    _fails(capsys, ["analyze", str(tmp_path / "none.gpabundle")], "does not exist")
    _fails(capsys, ["analyze", str(tmp_path)], "is a folder, not a .gpabundle", "gpa advise")


def test_analyze_to_an_unwritable_place(tmp_path, capsys):
    bundle = KERNELS / "restrict_fir" / "recorded" / "cupti.gpabundle"
    if not bundle.is_file():
        pytest.skip("kernels/restrict_fir has no recorded bundle")
    _fails(capsys, ["analyze", str(bundle), "--json", str(tmp_path / "no" / "such" / "dir.json")],
           "cannot write", "dir.json")


def test_advise_without_and_with_a_bad_gpa_toml(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    _fails(capsys, ["advise", str(empty)], "has no gpa.toml")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "gpa.toml").write_text('[build]\nsources = ["a.cu"]\n[profile\n')
    err = _fails(capsys, ["advise", str(broken)], "not valid TOML")
    assert f"{broken / 'gpa.toml'}:3: " in err           # the file and line at fault
    (broken / "gpa.toml").write_text('[build]\nsources = ["a.cu"]\nflavour = 1\n')
    err = _fails(capsys, ["advise", str(broken)], "unknown key 'flavour'")
    assert f"{broken / 'gpa.toml'}:3: " in err
    _fails(capsys, ["advise", str(tmp_path / "nowhere")], "is not a folder")


def test_advise_of_a_kernel_case_still_works(tmp_path, capsys):
    if not (KERNELS / "restrict_fir" / "recorded" / "cupti.gpabundle").is_file():
        pytest.skip("kernels/restrict_fir has no recorded bundle")
    ws = tmp_path / "restrict_fir"
    shutil.copytree(KERNELS / "restrict_fir", ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    assert main(["advise", str(ws), "--json", "-"]) == 0
    assert '"restrict_pointer"' in capsys.readouterr().out
