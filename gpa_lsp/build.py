"""Build the project: the configured build command, or nvcc over ``[build] sources``.

Compiler output is parsed into :class:`CompilerMessage` records so the
language server can show them as diagnostics at the right line. Standard
library only (plus gpa_lsp.toolchain/config/errors): this runs on the GPU
machine too.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .config import Config
from .errors import BuildError, HarnessError
from .profile import harness  # the same process-group handling as the harness
from .toolchain import find_tool


@dataclass(frozen=True)
class CompilerMessage:
    file: str | None        # absolute path when known; None for messages with no location (ptxas, ld)
    line: int | None        # 1-based
    column: int | None      # 1-based
    severity: str           # "error" | "warning" | "note" | "remark"
    text: str


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    command: tuple[str, ...] | str
    output: str | None                       # the built program (None for a custom command without [build] output)
    messages: tuple[CompilerMessage, ...] = ()
    log: str = ""
    returncode: int = 0

    @property
    def errors(self) -> tuple[CompilerMessage, ...]:
        return tuple(m for m in self.messages if m.severity == "error")

    def check(self) -> "BuildResult":
        """Raise :class:`BuildError` when the build failed; return self otherwise."""
        if not self.ok:
            first = self.errors[0] if self.errors else None
            where = f" ({Path(first.file).name}:{first.line}: {first.text})" if first and first.file else \
                (f" ({first.text})" if first else "")
            raise BuildError(f"the build failed with exit code {self.returncode}{where}",
                             "fix the compiler errors (shown as diagnostics in the editor)", output=self.log[-8000:])
        return self


# nvcc front end (EDG):  file.cu(12): error: text   /  file.cu(12): warning #177-D: text
_EDG = re.compile(r"^(?P<file>[^\s(][^()]*?)\((?P<line>\d+)\): (?P<sev>error|warning|remark|note|catastrophic error)"
                  r"(?: #[\w-]+)?: (?P<text>.*)$")
# host compiler (gcc/clang): file.cu:12:5: error: text
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
                  r"(?P<text>.*)$")
# ptxas / nvlink / nvcc itself: no location
_TOOL = re.compile(r"^(?P<tool>ptxas|nvlink|nvcc|fatbinary|cicc)\s*(?P<sev>fatal|error|warning)\s*:\s*(?P<text>.*)$", re.I)
_LD = re.compile(r"^(?:/\S*/)?ld(?:\.\w+)?: (?P<text>.*)$")
_CARET = re.compile(r"^\s*\^\s*$")


def _abs(file: str, cwd: str | os.PathLike) -> str:
    p = Path(file)
    return str(p if p.is_absolute() else (Path(cwd) / p).resolve())


def parse_messages(text: str, cwd: str | os.PathLike = ".") -> tuple[CompilerMessage, ...]:
    """Compiler messages from nvcc / gcc / ptxas / ld output, de-duplicated, in order."""
    out: list[CompilerMessage] = []
    seen: set[tuple] = set()
    lines = text.splitlines()

    def add(m: CompilerMessage) -> None:
        key = (m.file, m.line, m.severity, m.text)
        if key not in seen:
            seen.add(key)
            out.append(m)

    for i, line in enumerate(lines):
        m = _EDG.match(line)
        if m:
            col = None
            # EDG prints the source line (indented by 2) and a caret line under it
            if i + 2 < len(lines) and _CARET.match(lines[i + 2]):
                col = max(1, lines[i + 2].index("^") - 2 + 1)
            sev = "error" if "error" in m.group("sev") else m.group("sev")
            add(CompilerMessage(_abs(m.group("file"), cwd), int(m.group("line")), col, sev, m.group("text").strip()))
            continue
        m = _GCC.match(line)
        if m and not line.startswith(("In file included", " ")):
            sev = "error" if "error" in m.group("sev") else m.group("sev")
            add(CompilerMessage(_abs(m.group("file"), cwd), int(m.group("line")),
                                int(m.group("col")) if m.group("col") else None, sev, m.group("text").strip()))
            continue
        m = _TOOL.match(line)
        if m:
            sev = "warning" if m.group("sev").lower() == "warning" else "error"
            add(CompilerMessage(None, None, None, sev, f"{m.group('tool')}: {m.group('text').strip()}"))
            continue
        m = _LD.match(line)
        if m:
            add(CompilerMessage(None, None, None, "error", "ld: " + m.group("text").strip()))
    return tuple(out)


# nvcc runs its sub-tools through a shell and puts file names into those lines unquoted: it
# executes ``$(...)`` and backticks found in a source file's or folder's name (issue 16, seen with
# plain nvcc and a list argv). Names holding any of these are refused before nvcc sees them.
SHELL_CHARS = frozenset("$`;|&<>\"'\\\n")


def nvcc_safe(path: str, what: str) -> str:
    """``path`` unchanged, or :class:`BuildError` naming it when nvcc's shell would interpret part of it."""
    bad = sorted(set(path) & SHELL_CHARS)
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise BuildError(f"{what} {path!r} contains {shown}, which nvcc would hand to a shell; gpa does not "
                         "pass such a name to nvcc", "rename the file or folder (letters, digits, '-', '_', '.', "
                         "spaces), or build with [build] command and point [build] output at the program")
    return path


def nvcc_argv(config: Config) -> list[str]:
    """The nvcc command line for ``[build] sources`` (``-lineinfo`` added when missing)."""
    b = config.build
    if not b.sources:
        raise BuildError("nothing to build: [build] has neither command nor sources",
                         "set [build] sources = [\"app.cu\"] (or command = [...]) in gpa.toml")
    flags = list(b.nvcc_flags)
    if "-lineinfo" not in flags and "--generate-line-info" not in flags and "-G" not in flags:
        flags.append("-lineinfo")
    sources = [nvcc_safe(config.resolve(s), "the source") for s in b.sources]
    return [find_tool("nvcc", b.nvcc), *flags, "-o", nvcc_safe(output_path(config), "the [build] output"), *sources]


def output_path(config: Config) -> str:
    b = config.build
    if b.output:
        return config.resolve(b.output)
    stem = Path(b.sources[0]).stem if b.sources else "app"
    return config.resolve(f"build/{stem}")


def arch_of(flags: Sequence[str]) -> str:
    """The sm_XX a flag list builds for (``-arch=sm_90``, ``-arch sm_90a``, ``-gencode ...code=sm_90``)."""
    text = " ".join(flags)
    m = re.search(r"(?:-arch[= ]|--gpu-architecture[= ]|code=)(?:compute_|sm_)?(sm_\d+a?|\d+a?)", text)
    if m:
        v = m.group(1)
        return v if v.startswith("sm_") else f"sm_{v}"
    return "sm_90"


def lineinfo_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``NVCC_APPEND_FLAGS`` with ``-lineinfo`` for a build gpa does not drive (make, CMake, a script):
    every nvcc it runs then writes the line table the advice needs. The user's own flags stay
    first; nothing is added when they already ask for line info (or ``-G``)."""
    environ = os.environ if environ is None else environ
    have = environ.get("NVCC_APPEND_FLAGS", "")
    if {"-lineinfo", "--generate-line-info", "-G", "--device-debug"} & set(have.split()):
        return {}
    return {"NVCC_APPEND_FLAGS": f"{have} -lineinfo".strip()}


def build(config: Config, cancel: threading.Event | None = None, *, timeout: float = 900.0) -> BuildResult:
    """Build the project. Failure is a BuildResult with ``ok=False`` and the parsed messages."""
    b = config.build
    root = config.root
    env: dict[str, str] = {}
    if b.command:
        command: tuple[str, ...] | str = b.command
        argv = ["/bin/sh", "-c", b.command] if isinstance(b.command, str) else list(b.command)
        out = config.resolve(b.output) if b.output else None
        env = lineinfo_env()
    else:
        argv = nvcc_argv(config)
        command = tuple(argv)
        out = output_path(config)
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    try:
        res = harness.run(argv, cwd=root, env=env, timeout=timeout, cancel=cancel, what="build", check=False,
                          tail_chars=200_000)
    except HarnessError as exc:
        if "cancelled" in exc.message:
            raise
        raise BuildError(exc.message, exc.hint, output=exc.output_tail) from None
    log = (res.stdout + ("\n" if res.stdout and res.stderr else "") + res.stderr)
    messages = parse_messages(log, root)
    ok = res.returncode == 0 and (out is None or Path(out).exists())
    if res.returncode == 0 and not ok:
        messages += (CompilerMessage(None, None, None, "error", f"the build exited 0 but did not produce {out}"),)
    return BuildResult(ok=ok, command=command, output=out, messages=messages, log=log, returncode=res.returncode)


def build_cubins(config: Config, outdir: str | os.PathLike, cancel: threading.Event | None = None) -> list[Path]:
    """``-cubin`` of each ``[build] sources`` file with the same flags (for collectors that see no cubin)."""
    b = config.build
    nvcc = find_tool("nvcc", b.nvcc)
    # keep the optimisation flags; drop targets (one -arch is set below) and link-only flags
    cleaned: list[str] = []
    skip = False
    for f in b.nvcc_flags:
        if skip:
            skip = False
        elif f in ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "-o", "-Xlinker"):
            skip = True
        elif not f.startswith(("-arch=", "--gpu-architecture=", "-gencode=", "--generate-code=", "-code=",
                                "-l", "-L", "-Xlinker=", "-lineinfo")):
            cleaned.append(f)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for src in b.sources:
        if not src.endswith((".cu", ".ptx")):
            continue
        dst = outdir / (Path(src).stem + ".cubin")
        argv = [nvcc, "-cubin", f"-arch={arch_of(b.nvcc_flags)}", *cleaned, "-lineinfo",
                "-o", nvcc_safe(str(dst), "the cubin output"), nvcc_safe(config.resolve(src), "the source")]
        res = harness.run(argv, cwd=config.root, timeout=900, cancel=cancel, what="nvcc -cubin", check=False,
                          tail_chars=50_000)
        if res.returncode != 0:
            raise BuildError(f"nvcc -cubin failed for {src}", "see the compiler output", output=res.output_tail)
        paths.append(dst)
    return paths


def describe(command: Sequence[str] | str) -> str:
    return command if isinstance(command, str) else shlex.join(command)
