#!/usr/bin/env python3
"""Write bundled/libs: the gpa-lsp package and the Python packages its server imports, for the
.vsix (the vscode-python-tools-extension-template convention; `npm run bundle:python`).

    python3 scripts/bundle_python.py [--out DIR] [--python 3.11,3.12,3.13]

Pure-Python dependencies are installed once. The compiled ones the server imports (tree-sitter;
tree-sitter-cuda is abi3) are installed for each CPython in --python on manylinux x86_64, side by
side (each version's extension module has its own file name). Not bundled: cuda-bindings (only
read on a GPU machine, optional) and NVIDIA's nvdisasm/cuobjdump (the CUDA toolkit's are found on
PATH, CUDA_HOME or /usr/local/cuda); `gpa doctor` says what a machine lacks.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent          # editors/vscode
REPO = HERE.parent.parent
NOT_BUNDLED = ("cuda-bindings", "cuda-python", "nvidia-")
COMPILED = ("tree-sitter",)                            # per CPython version (not abi3)
PLATFORM = "manylinux2014_x86_64"


def _name(spec: str) -> str:
    return re.split(r"[<>=!~;\[ ]", spec, 1)[0].lower().replace("_", "-")


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-cache-dir", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "bundled" / "libs"))
    ap.add_argument("--python", default="3.11,3.12,3.13", help="CPython versions for the compiled packages")
    args = ap.parse_args(argv)
    out = Path(args.out)
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    bundled = [d for d in deps if not _name(d).startswith(NOT_BUNDLED)]
    compiled = [d for d in bundled if _name(d) in COMPILED]
    rest = [d for d in bundled if _name(d) not in COMPILED]
    versions = [v.strip() for v in args.python.split(",") if v.strip()]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    oldest = versions[0]
    target = ["--only-binary=:all:", "--platform", PLATFORM, "--implementation", "cp"]
    # the rest with their dependencies, resolved for the oldest Python (the markers of newer ones
    # need no more: exceptiongroup and friends are for < 3.11)
    pip("--target", str(out), *target, "--python-version", oldest, *rest)
    for v in versions:
        with tempfile.TemporaryDirectory() as tmp:
            pip("--target", tmp, "--no-deps", *target, "--python-version", v, *compiled)
            shutil.copytree(tmp, out, dirs_exist_ok=True)
    # gpa-lsp itself, from a copy of this checkout (setuptools builds in the source tree)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "src", Path(tmp) / "out"
        shutil.copytree(REPO / "gpa_lsp", src / "gpa_lsp", ignore=shutil.ignore_patterns("__pycache__"))
        for f in ("pyproject.toml", "README.md"):
            shutil.copy(REPO / f, src / f)
        pip("--target", str(dst), "--no-deps", str(src))
        shutil.copytree(dst, out, dirs_exist_ok=True)
    for junk in [out / "bin", *out.rglob("__pycache__")]:
        shutil.rmtree(junk, ignore_errors=True)
    names = sorted(p.name for p in out.iterdir() if p.suffix != ".dist-info")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"bundled into {out}: {', '.join(names)} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
