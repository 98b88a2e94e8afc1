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


def nvcc_compiles(path: Path, tmp: Path) -> tuple[bool, str]:
    """Compile a .cu with the real nvcc (device + host object); (ok, stderr)."""
    import subprocess

    from gpa_lsp.toolchain import find_tool

    proc = subprocess.run([find_tool("nvcc"), "-arch=sm_90", "-c", "-o", str(tmp / (path.stem + ".o")), str(path)],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode == 0, proc.stderr
