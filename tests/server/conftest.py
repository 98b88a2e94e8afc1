"""Fixtures for the language-server tests: a copy of a recorded workspace in a tmp dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"          # app.cu + gpa.toml + recorded/cupti.gpabundle (recorded on an H100)


@pytest.fixture
def recorded_ws(tmp_path) -> Path:
    """A writable copy of tests/server/workspace (edits and caches stay in tmp)."""
    dst = tmp_path / "relax"
    shutil.copytree(WORKSPACE, dst, ignore=shutil.ignore_patterns("build", ".gpa"))
    return dst


def nvcc_compiles(path: Path, tmp: Path, *, device_only: bool = False) -> tuple[bool, str]:
    """Compile a .cu with the real nvcc (device + host object); (ok, stderr). ``device_only``: the
    device code alone (-cubin, a quarter of the time), for edits inside kernel and __device__
    function bodies, which nvcc's host pass never compiles."""
    import subprocess

    from gpa_lsp.toolchain import find_tool

    out = tmp / (path.stem + (".cubin" if device_only else ".o"))
    proc = subprocess.run([find_tool("nvcc"), "-arch=sm_90", "-cubin" if device_only else "-c", "-o", str(out), str(path)],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode == 0, proc.stderr
