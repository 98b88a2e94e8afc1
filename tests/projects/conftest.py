"""The example projects (examples/make_project, examples/cmake_project), copied and built once per
session by gpa's own build stage, as `gpa profile` builds them."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROJECTS = {"make_project": ("build/smooth", "smooth_kernel", "src/smooth.cu"),
            "cmake_project": ("build/rowsum", "row_sums_kernel", "src/rowsum.cu")}


def cmake_bin_dir() -> str:
    """cmake from PyPI (the test extra) without an activated environment, else one on PATH."""
    try:
        import cmake  # type: ignore
        return cmake.CMAKE_BIN_DIR
    except (ImportError, AttributeError):
        pass
    here = Path(sys.executable).parent / "cmake"
    if here.is_file():
        return str(here.parent)
    found = shutil.which("cmake")
    if found:
        return str(Path(found).parent)
    pytest.fail("cmake not found: pip install cmake (in the test extra), or apt-get install cmake")


def copy_example(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("build", "recorded", ".gpa"))
    return target


@pytest.fixture(scope="session")
def built_projects(tmp_path_factory):
    """{name: (folder, config, BuildResult)} of both examples, built by gpa_lsp.build."""
    from gpa_lsp.build import build
    from gpa_lsp.config import load
    base = tmp_path_factory.mktemp("projects")
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = cmake_bin_dir() + os.pathsep + old_path
    os.environ.pop("NVCC_APPEND_FLAGS", None) if os.environ.get("NVCC_APPEND_FLAGS") == "-lineinfo" else None
    out = {}
    try:
        for name in PROJECTS:
            folder = copy_example(name, base)
            cfg = load(folder)
            res = build(cfg)
            assert res.ok, res.log[-4000:]
            out[name] = (folder, cfg, res)
    finally:
        os.environ["PATH"] = old_path
    return out
