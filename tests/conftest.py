"""Shared fixtures: real cubins built with nvcc inside the tests (cached per session).

The suite runs on every core (scripts/test.sh: pytest-xdist, ``-n logical --dist loadgroup``):
each worker has its own session, so session and module fixtures run once per worker that needs
them. A module whose tests must stay on one worker says so with
``pytestmark = pytest.mark.xdist_group("name")``: those that write one shared place (the VS Code
extension's build in the tree, a cache under ~/.cache) and those whose fixture is too costly to
run twice (the make and CMake builds).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from gpa_lsp import toolchain
from gpa_lsp.errors import ToolNotFound
from gpa_lsp.toolchain import compile_cubin

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
NVDISASM_ONCE = Path(__file__).resolve().parent / "nvdisasm_once.py"


def pytest_configure(config):
    """A folder for the session, shared by this process, the xdist workers it starts and every
    process they start (they inherit the environment; a worker finds the variables set by the
    controller and keeps them): GPA_TEST_COMPILED keeps which texts compiled (tests/server/conftest.py's
    nvcc_compiles), and tests/nvdisasm_once.py stands in front of the real nvdisasm through
    GPA_NVDISASM (toolchain's override), so each distinct cubin is disassembled once per session."""
    if os.environ.get("GPA_TEST_COMPILED"):
        return
    folder = Path(tempfile.mkdtemp(prefix="gpa-tests-"))
    config._gpa_session_folder = folder
    (folder / "compiled").mkdir()
    os.environ["GPA_TEST_COMPILED"] = str(folder / "compiled")
    try:
        real = toolchain.find_tool("nvdisasm")
    except ToolNotFound:
        return                                   # the tests that need it say so themselves
    wrapper = folder / "bin" / "nvdisasm"        # named nvdisasm: tool_env puts its folder on PATH
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(NVDISASM_ONCE))} "$@"\n')
    wrapper.chmod(0o755)
    (folder / "nvdisasm").mkdir()
    os.environ.update(GPA_TEST_NVDISASM_REAL=real, GPA_TEST_NVDISASM_CACHE=str(folder / "nvdisasm"),
                      GPA_NVDISASM=str(wrapper))
    toolchain._find_cached.cache_clear()


def pytest_unconfigure(config):
    folder = getattr(config, "_gpa_session_folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def build_cubin(tmp_path_factory):
    """build_cubin(source_text_or_path, arch="sm_90", flags=("-O3",), name=None) -> Path of a -lineinfo cubin.

    The .cu is written to a real file first, so line tables carry a real path.
    """
    cache: dict[str, Path] = {}
    base = tmp_path_factory.mktemp("cubins")

    def _build(source, arch: str = "sm_90", flags=("-O3",), name: str | None = None) -> Path:
        if isinstance(source, Path):
            src_path = source
            text = source.read_text()
        else:
            text = source
            src_path = None
        key = hashlib.sha256(f"{text}|{arch}|{flags}|{src_path}".encode()).hexdigest()[:16]
        if key in cache:
            return cache[key]
        folder = base / key
        folder.mkdir()
        if src_path is None:
            src_path = folder / f"{name or 'kernel'}.cu"
            src_path.write_text(text)
        out = folder / f"{name or src_path.stem}.{arch}.cubin"
        compile_cubin(src_path, out, arch=arch, flags=tuple(flags))
        cache[key] = out
        return out

    return _build
