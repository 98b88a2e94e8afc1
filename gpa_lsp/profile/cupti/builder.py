"""Build ``gpa_inject.c`` into the injection library, once per CUPTI version and source.

CUPTI must match the driver's CUDA version, so a toolkit's own CUPTI
(``$CUDA_HOME/extras/CUPTI``, ``/usr/local/cuda/extras/CUPTI``) is preferred
to the ``nvidia-cuda-cupti`` wheel (whose version follows PyPI, not the
driver). The library is compiled with the host C compiler and cached under
``$XDG_CACHE_HOME/gpa-lsp/cupti/<key>/`` where the key hashes the C source,
the CUPTI version and paths: a new CUPTI or a changed source rebuilds it.
Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ... import procs
from ...errors import BuildError, ToolNotFound
from ...install import pip_extra
from ...user_cache import collector_cache_dir

SOURCE = Path(__file__).with_name("gpa_inject.c")
# an empty <string>: CUPTI 13.0.1's cupti_profiler_host.h includes that C++ header (measured on the
# H100's torch wheel), which a C compiler then reads as C
C_SHIM = Path(__file__).with_name("cshim")
LIBNAME = "libgpa_inject.so"


@dataclass(frozen=True)
class CuptiInstall:
    include: Path       # holds cupti_pcsampling.h, generated_cuda_meta.h
    library: Path       # libcupti.so[.N]
    cuda_include: Path  # holds cuda.h
    api_version: int
    origin: str         # "toolkit" | "wheel" | "env"

    @property
    def libdir(self) -> Path:
        return self.library.parent


def _wheel_roots() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    roots = []
    for r in spec.submodule_search_locations:
        for sub in ("cu13", "cuda_cupti", "cu12"):
            if (Path(r) / sub / "include" / "cupti_pcsampling.h").is_file():
                roots.append(Path(r) / sub)
    return roots


def _cuda_homes() -> list[Path]:
    homes = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    homes.append(Path("/usr/local/cuda"))
    return homes


def _find_lib(d: Path) -> Path | None:
    for name in ("libcupti.so", "libcupti.so.13", "libcupti.so.12"):
        if (d / name).exists():
            return d / name
    found = sorted(d.glob("libcupti.so*"))
    return found[0] if found else None


def _api_version(include: Path) -> int:
    try:
        m = re.search(r"#define\s+CUPTI_API_VERSION\s+(\d+)", (include / "cupti_version.h").read_text())
        return int(m.group(1)) if m else 0
    except OSError:
        return 0


def candidates() -> list[tuple[Path, Path, str]]:
    """(include dir, lib dir, origin), best first."""
    out: list[tuple[Path, Path, str]] = []
    if os.environ.get("GPA_CUPTI_ROOT"):
        root = Path(os.environ["GPA_CUPTI_ROOT"])
        out.append((root / "include", root / "lib64" if (root / "lib64").is_dir() else root / "lib", "env"))
    for home in _cuda_homes():
        out.append((home / "extras" / "CUPTI" / "include", home / "extras" / "CUPTI" / "lib64", "toolkit"))
    for root in _wheel_roots():
        out.append((root / "include", root / "lib", "wheel"))
    return out


def find_cupti(*, require_library: bool = True) -> CuptiInstall:
    """The CUPTI to build against and load (raises ToolNotFound with what to install)."""
    cuda_incs = [h / "include" for h in _cuda_homes()]
    for inc, libdir, origin in candidates():
        if not (inc / "cupti_pcsampling.h").is_file():
            continue
        lib = _find_lib(libdir) if libdir.is_dir() else None
        if lib is None and require_library:
            continue
        # a toolkit's include dir first: a wheel's cuda.h may come without crt/ and friends
        cuda_inc = next((d for d in [*cuda_incs, inc, *(r / "include" for r in _wheel_roots())]
                         if (d / "cuda.h").is_file() and (d / "crt").is_dir()), None) or \
            next((d for d in [*cuda_incs, inc] if (d / "cuda.h").is_file()), None)
        if cuda_inc is None:
            raise ToolNotFound("cuda.h was not found (needed to build the CUPTI injection library)",
                               "install the CUDA toolkit headers or set CUDA_HOME")
        return CuptiInstall(inc, lib or libdir / "libcupti.so", cuda_inc, _api_version(inc), origin)
    raise ToolNotFound("CUPTI (cupti_pcsampling.h and libcupti.so) was not found",
                       f"install gpa-lsp's cupti extra (it brings nvidia-cuda-cupti): {pip_extra('cupti')}; "
                       "or install the CUDA toolkit's CUPTI (extras/CUPTI, found through CUDA_HOME); "
                       "or use collector = \"ncu\"")


def find_cc() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    raise ToolNotFound("no C compiler (cc/gcc/clang) to build the CUPTI injection library",
                       "install gcc (apt-get install gcc), or use collector = \"ncu\"")


def cache_dir() -> Path:
    return collector_cache_dir() / "cupti"


def compile_argv(cc: str, cupti: CuptiInstall, out: Path, *, shared: bool = True,
                 range_profiler: bool = True) -> list[str]:
    """The compiler's arguments; ``range_profiler=False`` leaves out the counters mode (a CUPTI
    whose headers predate the Range Profiler, 12.6): the library still samples."""
    argv = [cc, "-O2", "-fPIC", "-std=gnu11", "-Wall", "-Wno-deprecated-declarations",
            *([] if range_profiler else ["-DGPA_NO_RANGE_PROFILER"]),
            # CUPTI's own include first: a toolkit's include dir may hold an older CUPTI's headers
            "-I", str(C_SHIM), "-I", str(cupti.include), "-I", str(cupti.cuda_include)]
    if shared:
        argv += ["-shared", "-o", str(out), str(SOURCE), str(cupti.library),
                 f"-Wl,-rpath,{cupti.libdir}", "-Wl,--disable-new-dtags", "-ldl", "-lpthread"]
    else:
        argv += ["-c", "-o", str(out), str(SOURCE)]
    return argv


def library_key(cupti: CuptiInstall) -> str:
    h = hashlib.sha256(SOURCE.read_bytes())
    h.update((C_SHIM / "string").read_bytes())
    h.update(f"|{cupti.api_version}|{cupti.include}|{cupti.library.resolve() if cupti.library.exists() else cupti.library}"
             .encode())
    return h.hexdigest()[:16]


def injection_library(cupti: CuptiInstall | None = None, *, force: bool = False) -> Path:
    """Path of the built injection library, compiling it when the cache has none."""
    cupti = cupti or find_cupti()
    target = cache_dir() / library_key(cupti) / LIBNAME
    if target.is_file() and not force:
        return target
    cc = find_cc()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / LIBNAME
        # in its own process group, killed whole on timeout (the compiler's own children too)
        proc = procs.run_tool(compile_argv(cc, cupti, out), timeout=300)
        if proc.returncode != 0:
            # no Range Profiler in this CUPTI: sampling still works, unit throughput falls back to ncu
            proc = procs.run_tool(compile_argv(cc, cupti, out, range_profiler=False), timeout=300)
        if proc.returncode != 0:
            raise BuildError("could not compile the CUPTI injection library",
                             f"check the C compiler and the CUPTI headers in {cupti.include}",
                             output=proc.stderr[-8000:])
        os.replace(out, target)
    return target


if __name__ == "__main__":  # pragma: no cover - used by scripts/gpu
    c = find_cupti()
    print(c)
    print(injection_library(c))
