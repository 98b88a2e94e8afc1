"""Fixtures for the language-server tests: a copy of a recorded workspace in a tmp dir."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpa_lsp.toolchain import find_tool

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"          # app.cu + gpa.toml + recorded/cupti.gpabundle (recorded on an H100)
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"', re.M)


@pytest.fixture
def recorded_ws(tmp_path) -> Path:
    """A writable copy of tests/server/workspace (edits and caches stay in tmp)."""
    dst = tmp_path / "relax"
    shutil.copytree(WORKSPACE, dst, ignore=shutil.ignore_patterns("build", ".gpa"))
    return dst


def nvcc_compiles(path: Path, tmp: Path, *, device_only: bool = False) -> tuple[bool, str]:
    """Compile a .cu with the real nvcc (device + host object); (ok, stderr). ``device_only``: the
    device code alone (-cubin, a quarter of the time), for edits inside kernel and __device__
    function bodies, which nvcc's host pass never compiles.

    A text that includes no file by a quoted path compiles the same wherever it lies: that it
    compiled is kept for the session (GPA_TEST_COMPILED, tests/conftest.py), keyed by nvcc, the
    flags and the text, so the same edit met again (the quick fixes for each editor) is compiled once."""
    out = tmp / (path.stem + (".cubin" if device_only else ".o"))
    argv = [find_tool("nvcc"), "-arch=sm_90", "-cubin" if device_only else "-c"]
    text = path.read_text()
    kept = None
    if os.environ.get("GPA_TEST_COMPILED") and not _QUOTED_INCLUDE.search(text):
        key = hashlib.sha256("\0".join([*argv, text]).encode()).hexdigest()
        kept = Path(os.environ["GPA_TEST_COMPILED"]) / key
        if kept.exists():
            return True, ""
    proc = subprocess.run([*argv, "-o", str(out), str(path)], capture_output=True, text=True, timeout=300)
    if proc.returncode == 0 and kept is not None:
        kept.touch()
    return proc.returncode == 0, proc.stderr
