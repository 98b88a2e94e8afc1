"""Find NVIDIA's tools and build CUDA sources.

Search order for each tool: an explicit path from configuration, then
``PATH``, then ``$CUDA_HOME/bin`` (and ``/usr/local/cuda/bin``), then the
binary shipped in a PyPI wheel (``nvidia-cuda-nvdisasm`` and
``nvidia-cuda-cuobjdump`` put theirs under ``nvidia/cu13/bin``), so a fresh
machine with no CUDA toolkit can still disassemble.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Sequence

from . import procs
from .errors import BuildError, ToolNotFound

_HINTS = {
    "nvcc": "install the CUDA toolkit (nvcc) or set CUDA_HOME / `toolchain.nvcc` in gpa.toml",
    "nvdisasm": "pip install nvidia-cuda-nvdisasm (gpa-lsp depends on it), or put a CUDA toolkit's nvdisasm on PATH",
    "cuobjdump": "pip install nvidia-cuda-cuobjdump, or put a CUDA toolkit's cuobjdump on PATH",
    "ncu": "install Nsight Compute (ncu) on the GPU machine or choose collector = \"cupti\"",
}


def _wheel_bin_dirs() -> list[Path]:
    dirs: list[Path] = []
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return dirs
    for root in spec.submodule_search_locations:
        for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_nvdisasm", "cuda_cuobjdump"):
            d = Path(root) / sub / "bin"
            if d.is_dir():
                dirs.append(d)
    return dirs


@functools.lru_cache(maxsize=None)
def _find_cached(name: str, explicit: str | None) -> str:
    if explicit:
        p = Path(explicit).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        raise ToolNotFound(f"{name} not found at configured path {explicit}", _HINTS.get(name, ""))
    env_override = os.environ.get(f"GPA_{name.upper()}")
    if env_override and Path(env_override).is_file():
        return env_override
    found = shutil.which(name)
    if found:
        return found
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "bin")
    candidates.append(Path("/usr/local/cuda/bin"))
    candidates.extend(_wheel_bin_dirs())
    if name == "ncu":
        candidates.extend(sorted(Path("/opt/nvidia").glob("nsight-compute/*"), reverse=True))
    for d in candidates:
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    raise ToolNotFound(f"{name} was not found (searched config, PATH, CUDA_HOME, the nvidia-* wheels)", _HINTS.get(name, ""))


def find_tool(name: str, explicit: str | None = None) -> str:
    """Absolute path of ``name`` (nvcc, nvdisasm, cuobjdump, ncu); raises ToolNotFound."""
    return _find_cached(name, explicit)


def tool_env() -> dict[str, str]:
    """Environment for NVIDIA tools: cuobjdump -sass needs nvdisasm on PATH."""
    env = dict(os.environ)
    try:
        nvdisasm = find_tool("nvdisasm")
        env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env.get("PATH", "")
        env.setdefault("NVDISASM_PATH", nvdisasm)
    except ToolNotFound:
        pass
    return env


def run_tool(argv: Sequence[str], *, timeout: float = 300) -> str:
    """Run a tool (argument list, never a shell string) and return stdout; raise on failure."""
    proc = procs.run_tool(list(argv), timeout=timeout, env=tool_env())    # its process group killed on timeout
    if proc.returncode != 0:
        raise BuildError(
            f"{Path(argv[0]).name} failed with exit code {proc.returncode}",
            "see the tool output",
            output=(proc.stderr or proc.stdout)[-8000:],
        )
    return proc.stdout


def compile_cubin(source: str | os.PathLike, out: str | os.PathLike, *, arch: str = "sm_90",
                  flags: Sequence[str] = ("-O3",), nvcc: str | None = None) -> Path:
    """Compile one .cu to a cubin with ``-lineinfo`` (added when missing)."""
    argv = [find_tool("nvcc", nvcc), "-cubin", f"-arch={arch}", *flags]
    if "-lineinfo" not in argv and "-G" not in argv:
        argv.append("-lineinfo")
    argv += ["-o", str(out), str(source)]
    proc = procs.run_tool(argv, timeout=600)      # nvcc and its cicc/ptxas killed together on timeout
    if proc.returncode != 0:
        raise BuildError(f"nvcc failed to compile {source}", "fix the errors reported by nvcc", output=proc.stderr)
    return Path(out)
