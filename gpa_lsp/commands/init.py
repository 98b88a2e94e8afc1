"""`gpa init [DIR] [--force]`: write a commented gpa.toml for a folder.

It looks at what is there: the .cu files and their kernels, a Makefile or a CMakeLists.txt (then
the build is that, and the executable it makes is guessed from the file), a likely harness (a
script named harness*/run*/bench*, else the built program), and the GPU's sm through
cuda-bindings (sm_90 when there is no GPU here). A Python harness with no .cu defining main()
loads its kernels itself: the .cu files it names as ``<stem>.cubin`` are built with ``nvcc -cubin``
for it to load, those it names as ``.cu`` it compiles at run time (NVRTC), which needs no build. Every key is explained in a comment; the file is
read back through gpa_lsp.config before it is kept, so what it writes always loads.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..config import from_mapping, load_file, parse_toml
from ..errors import ConfigError
from ..profile.device import query_device
from ..profile.gpu_check import driver_status

_SKIP_DIRS = {".git", ".gpa", "build", "node_modules", "__pycache__", ".venv", "venv", "recorded", "third_party"}
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_HARNESS_RE = re.compile(r"^(harness|run|bench|benchmark)[\w.-]*\.(py|sh)$", re.I)
_MAKE_VAR_RE = re.compile(r"^\s*(?:TARGET|TARGETS|EXEC|EXE|BIN|BINARY|APP|PROGRAM|PROG|NAME|OUT)\s*[:?]?=\s*([\w./-]+)\s*$",
                          re.M)
_MAKE_RULE_RE = re.compile(r"^([\w./-]+)\s*:(?!=)\s*(.*)$", re.M)
_CMAKE_EXE_RE = re.compile(r"add_executable\s*\(\s*([\w.+-]+)", re.I)
_GLOBAL_RE = re.compile(r"\b__global__\b")
_BOUNDS_RE = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_NAME_RE = re.compile(r"[^(;{]*?(\w+)\s*\(")
_MAIN_RE = re.compile(r"\bint\s+main\s*\(")


@dataclass
class Project:
    root: Path
    cu_files: list[str] = field(default_factory=list)       # relative to root
    kernels: list[str] = field(default_factory=list)
    main_file: str | None = None                             # the .cu that defines main()
    other_mains: list[str] = field(default_factory=list)     # more .cu files with a main(): left out
    makefile: str | None = None
    cmake: bool = False
    output: str | None = None                                 # the executable the build makes (relative)
    other_outputs: list[str] = field(default_factory=list)
    harness_script: str | None = None
    cubin_sources: list[str] = field(default_factory=list)   # .cu the Python harness loads as <stem>.cubin
    runtime_sources: list[str] = field(default_factory=list)  # .cu it names itself (NVRTC at run time)
    bundles: list[str] = field(default_factory=list)
    sm: int = 90
    sm_from_gpu: str | None = None                           # the GPU's name when sm came from it
    cmake_sets_arch: bool = False


def _walk_cu(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*.cu")):
        rel = p.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        out.append(p)
    return out


def _kernels(text: str) -> list[str]:
    """Names of the __global__ functions of a source (the identifier before the parameter list)."""
    out = []
    for m in _GLOBAL_RE.finditer(text):
        head = _BOUNDS_RE.sub("", text[m.end():m.end() + 400])
        n = _NAME_RE.match(head)
        if n and n.group(1) not in out:
            out.append(n.group(1))
    return out


def _make_output(text: str) -> str | None:
    m = _MAKE_VAR_RE.search(text)
    if m:
        return m.group(1)
    rules = [(t, deps) for t, deps in _MAKE_RULE_RE.findall(text)]
    for target, deps in rules:
        if target == "all":
            first = deps.split()[0] if deps.split() else ""
            if first and "$" not in first:
                return first
    for target, _ in rules:
        if target.startswith(".") or target in ("all", "clean", "install", "test", "check", "run") or \
                target.endswith((".o", ".obj", ".cubin", ".ptx", ".a", ".so")):
            continue
        return target
    return None


def _gpu_sm() -> tuple[int, str | None]:
    if not driver_status(init=False).libcuda:        # no driver: no cuda-bindings call at all
        return 90, None
    dev = query_device()
    return (dev.sm, dev.name) if dev is not None and dev.sm else (90, None)


def scan(root: str | Path) -> Project:
    root = Path(root).resolve()
    p = Project(root)
    for f in _walk_cu(root):
        rel = f.relative_to(root).as_posix()
        p.cu_files.append(rel)
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        p.kernels += [k for k in _kernels(text) if k not in p.kernels]
        if _MAIN_RE.search(text):
            if p.main_file is None:
                p.main_file = rel
            else:
                p.other_mains.append(rel)
    p.makefile = next((m for m in _MAKEFILES if (root / m).is_file()), None)
    if (root / "CMakeLists.txt").is_file():
        p.cmake = True
        text = (root / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace")
        names = _CMAKE_EXE_RE.findall(text)
        if names:
            p.output = f"build/{names[0]}"
            p.other_outputs = [f"build/{n}" for n in names[1:]]
        p.cmake_sets_arch = "CUDA_ARCHITECTURES" in text
    elif p.makefile:
        p.output = _make_output((root / p.makefile).read_text(encoding="utf-8", errors="replace"))
    elif p.cu_files:
        stem = Path(p.main_file or p.cu_files[0]).stem
        p.output = f"build/{stem}"
    p.harness_script = next((f.name for f in sorted(root.iterdir()) if f.is_file() and _HARNESS_RE.match(f.name)),
                            None)
    if p.harness_script and p.harness_script.endswith(".py") and p.main_file is None and not (p.cmake or p.makefile):
        _python_loader(p, (root / p.harness_script).read_text(encoding="utf-8", errors="replace"))
    rec = root / "recorded"
    if rec.is_dir():
        p.bundles = sorted(f"recorded/{b.name}" for b in rec.glob("*.gpabundle"))
    p.sm, p.sm_from_gpu = _gpu_sm()
    return p


def _python_loader(p: Project, script: str) -> None:
    """The .cu files a Python harness loads as cubins (named ``<stem>.cubin`` in it) or compiles
    itself (named ``<file>.cu``); the first cubin is what [build] makes."""
    for rel in p.cu_files:
        stem, name = Path(rel).stem, Path(rel).name
        if re.search(r"\b" + re.escape(stem) + r"\.cubin\b", script):
            p.cubin_sources.append(rel)
        elif re.search(r"\b" + re.escape(name) + r"\b", script):
            p.runtime_sources.append(rel)
    if p.cubin_sources:
        p.output = f"build/{Path(p.cubin_sources[0]).stem}.cubin"


def _q(s: str) -> str:
    return json.dumps(s)


def _list(items) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def render(p: Project) -> str:
    arch = f"sm_{p.sm}"
    where = f"the GPU here ({p.sm_from_gpu})" if p.sm_from_gpu else "no GPU here: Hopper (H100) assumed"
    L = [f"# gpa.toml, written by `gpa init` for {p.root.name}/. Every key is optional; the full list is",
         "# in gpa_lsp/config.py. Paths are relative to this file's folder.", ""]
    L += ["[build]"]
    if p.cmake or p.makefile:
        if p.cmake:
            arch_flag = "" if p.cmake_sets_arch else f" -DCMAKE_CUDA_ARCHITECTURES={p.sm}"
            cmd = f"cmake -S . -B build -DCMAKE_BUILD_TYPE=Release{arch_flag} && cmake --build build -j"
            L += ["# CMakeLists.txt found: gpa runs your build (a string runs in /bin/sh; a list runs without a shell).",
                  *([f"# CMAKE_CUDA_ARCHITECTURES={p.sm}: {where}."] if arch_flag else [])]
        else:
            cmd = "make"
            L += [f"# {p.makefile} found: gpa runs your build (a list runs without a shell; a string runs in /bin/sh)."]
        L += ["# gpa adds -lineinfo (source lines for the advice) through NVCC_APPEND_FLAGS without editing",
              "# your build files; if the program was built before without it, clean once so nvcc runs again.",
              f"command = {_q(cmd) if p.cmake else _list([cmd])}"]
        L += ["# the executable the build makes: the Nsight Compute collector reads its cubins from it"]
        if p.output:
            L += [f"output = {_q(p.output)}"]
            if p.other_outputs:
                L += [f"# other executables of the build: {', '.join(p.other_outputs)}"]
        else:
            L += ["# output = \"build/app\"            # TODO: could not tell from the build files"]
    elif p.cubin_sources or p.runtime_sources:
        L += [f"# {p.harness_script} loads its kernels itself (no .cu defines main())"]
        if p.cubin_sources:
            L += [f"# nvcc -cubin builds the cubin it loads (with -lineinfo added); -arch={arch}: {where}",
                  f"sources = {_list(p.cubin_sources[:1])}",
                  f"nvcc_flags = {_list(['-O3', f'-arch={arch}', '-cubin'])}",
                  "# the cubin: the Nsight Compute collector reads it",
                  f"output = {_q(p.output)}"]
            if p.cubin_sources[1:]:
                L += [f"# also loaded as cubins (build them with [build] command): {', '.join(p.cubin_sources[1:])}"]
        if p.runtime_sources:
            L += [f"# compiled by {p.harness_script} when it runs (NVRTC), no build: {', '.join(p.runtime_sources)}",
                  "# (CUPTI saves the cubins a program loads; compile with --generate-line-info and name the",
                  "# program by the source's path for source lines)"]
    elif p.cu_files:
        sources = [p.main_file] if p.main_file else []
        sources += [f for f in p.cu_files if f not in sources and f not in p.other_mains]
        L += ["# the .cu files nvcc compiles and links into one program (with -lineinfo added)",
              f"sources = {_list(sources)}"]
        if p.other_mains:
            L += [f"# left out (they define main() too): {', '.join(p.other_mains)}"]
        L += [f"# -arch={arch}: {where}",
              f"nvcc_flags = {_list(['-O3', f'-arch={arch}'])}",
              "# the program it builds",
              f"output = {_q(p.output or 'build/app')}"]
    else:
        L += ["# no .cu file, Makefile or CMakeLists.txt found here: say how to build",
              "# sources = [\"app.cu\"]",
              f"# nvcc_flags = [\"-O3\", \"-arch={arch}\"]",
              "# command = [\"make\"]"]
    L += ["", "[harness]",
          "# the program gpa runs under the profiler: it must launch your kernels and exit 0. Keep it",
          "# short (seconds): the kernels are sampled, they need not run long. A string runs in /bin/sh."]
    if p.harness_script:
        runner = "python3" if p.harness_script.endswith(".py") else "bash"
        L += [f"command = {_list([runner, p.harness_script])}"]
        if p.output and not p.output.endswith(".cubin"):
            L += [f"# or the built program: command = {_list([p.output])}"]
    elif p.output and (p.main_file or p.cmake or p.makefile):
        L += [f"command = {_list([p.output])}"]
    else:
        L += ["# command = [\"build/app\", \"--small\"]   # TODO: how to run your program"]
    L += ["# seconds before the run is killed", "timeout = 300",
          "# extra environment for the run, e.g. env = { N = \"4096\" }", ""]
    L += ["[profile]",
          "# \"cupti\": CUPTI PC sampling (needs CUPTI: gpa-lsp's cupti extra, or the toolkit's extras/CUPTI)",
          "# \"ncu\": Nsight Compute; \"replay\": never record, show the bundle below",
          "collector = \"cupti\"",
          "# a recorded profile: what `gpa advise` and the editor show where there is no GPU"]
    if p.bundles:
        L += [f"bundle = {_q(p.bundles[0])}"]
    else:
        L += ["# record it on a GPU machine: gpa profile --out recorded/cupti.gpabundle .",
              "# bundle = \"recorded/cupti.gpabundle\""]
    L += ["# substrings of the kernel names to profile; empty: all"
          + (f" (found: {', '.join(p.kernels[:8])}{' ...' if len(p.kernels) > 8 else ''})" if p.kernels else ""),
          "kernels = []", ""]
    return "\n".join(L)


def write(folder: str | Path, *, force: bool = False) -> tuple[Path, Project]:
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{folder} is not a folder", "pass the project folder: gpa init path/to/project")
    target = root / "gpa.toml"
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists; it was left as it is",
                          "edit it, or run `gpa init --force` to replace it")
    project = scan(root)
    text = render(project)
    tmp = root / ".gpa.toml.new"
    tmp.write_text(text, encoding="utf-8")
    try:
        load_file(tmp)       # what init writes must load (raises ConfigError with the line)
    except ConfigError:
        tmp.unlink()
        raise
    tmp.replace(target)
    return target, project


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("init", help="write a commented gpa.toml for a project folder")
    p.add_argument("dir", nargs="?", default=".", help="project folder (default: .)")
    p.add_argument("--force", action="store_true", help="replace an existing gpa.toml")
    p.add_argument("--stdout", action="store_true",
                   help="print the gpa.toml it would write, write nothing (the editor's GPA: Create gpa.toml)")
    p.set_defaults(func=run)


def checked_text(folder: str | Path) -> str:
    """The gpa.toml ``write`` would put in ``folder``, checked to load (ConfigError with the line,
    naming the file it would be) as ``load_file`` loads it, from the text: nothing is written."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{folder} is not a folder", "pass the project folder: gpa init path/to/project")
    text = render(scan(root))
    p = root / "gpa.toml"
    from_mapping(parse_toml(text, p), root=str(root.resolve()), text=text, path=str(p))
    return text


def run(args) -> int:
    if args.stdout:
        sys.stdout.write(checked_text(args.dir))
        return 0
    target, p = write(args.dir, force=args.force)
    built = p.cubin_sources[:1] if p.cubin_sources or p.runtime_sources else p.cu_files[:3]
    build = "CMake" if p.cmake else (p.makefile or ("nvcc " + ", ".join(built) if built else "nothing found"))
    print(f"wrote {target}")
    print(f"  build:   {build}" + (f" -> {p.output}" if p.output else ""))
    print(f"  kernels: {', '.join(p.kernels) if p.kernels else 'none found in .cu files'}")
    print(f"  arch:    sm_{p.sm}" + (f" ({p.sm_from_gpu})" if p.sm_from_gpu else " (no GPU here: sm_90 assumed)"))
    print("next: check the TODOs and keys in it; `gpa doctor` says what this machine can do; on a GPU machine "
          f"`gpa profile {args.dir}` records a profile, and `gpa advise {args.dir}` shows the advice")
    return 0
