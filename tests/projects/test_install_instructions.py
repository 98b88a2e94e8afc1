"""Every install instruction in the repository is true: each `pip install` names a path that holds
gpa-lsp (the repository, '/path/to/gpa-lsp' standing for it, or the wheel `pip wheel` builds from
it), an extra gpa-lsp has, or a package gpa-lsp itself installs from PyPI; never `gpa-lsp` by name
(it is not on PyPI). And the README's two commands: the first gives the advice it promises, the
second (what CI runs) installs the test tools, Chromium with apt-get when missing, and runs pytest
on every core."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
PLACEHOLDER = "/path/to/gpa-lsp"


def _name(spec: str) -> str:
    return re.split(r"[<>=!~;\[ ]", spec, 1)[0].lower().replace("_", "-")


# what gpa-lsp installs from PyPI itself: installable by construction
KNOWN = {_name(d) for d in PYPROJECT["project"]["dependencies"]} | \
    {_name(d) for ds in PYPROJECT["project"]["optional-dependencies"].values() for d in ds}
SKIP = {"tests/projects/test_install_instructions.py"}
_CUT = re.compile(r"\s#|`|\"|\s\(|&&|\|\||;|\)|,|:\s|\s-{1,2}\s")
# pip options whose value is the next word (a folder, a version, a platform), not a package
_VALUED = {"--target", "-t", "-d", "--dest", "--python-version", "--platform", "--implementation", "--abi",
           "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--prefix", "--root"}


def _files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [ROOT / f for f in out if f and f not in SKIP and not f.endswith((".json", ".gpabundle", ".gz", ".png"))
            and "node_modules" not in f and (ROOT / f).is_file()]


def instructions() -> list[tuple[str, int, str, list[str]]]:
    """(file, line, text, specs) of every `pip install` in the repository (not f-string templates)."""
    found = []
    for f in _files():
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in re.finditer(r"\bpip3? install\b(.*)", line):
                if "{" in m.group(1):
                    continue           # built at run time: gpa_lsp/install.py, tested below
                rest = _CUT.split(m.group(1), 1)[0]
                try:
                    words = shlex.split(rest)
                except ValueError:
                    words = rest.split()
                specs = [w for i, w in enumerate(words) if not w.startswith("-") and (i == 0 or words[i - 1] not in _VALUED)]
                found.append((str(f.relative_to(ROOT)), n, line.strip(), specs))
    return found


def _from_root(file: str, line: str) -> bool:
    p = ROOT / file
    return p.parent == ROOT or "repository root" in line or \
        (p.is_file() and 'cd "$(dirname "$0")/.."' in p.read_text())


def check(file: str, line: str, spec: str) -> str | None:
    """Why the instruction is not true, or None."""
    base, _, extra = spec.partition("[")
    extras = set(extra.rstrip("]").split(",")) - {""}
    if "*" in base and base.endswith(".whl"):
        # wheels carried to the GPU machine: the same file's `pip download ... -d DIR` fetches them
        folder = str(Path(base).parent)
        text = (ROOT / file).read_text() if (ROOT / file).is_file() else ""
        fetched = re.search(r"pip3? download\b[^\n]*(?:\\\n[^\n]*)*\s(?:-d|--dest)\s+" + re.escape(folder) + r"(?:\s|/|$)", text)
        return None if fetched else f"{base}: no `pip download -d {folder}` in {file} says where these wheels come from"
    if base == "." or base.startswith(("./", "/", "~")) or base.endswith(".whl"):
        if base == PLACEHOLDER or base == ".":
            if base == "." and not _from_root(file, line):
                return "'.' but the instruction does not say it runs from the repository root"
        elif base.endswith(".whl"):
            if Path(base).name != f"gpa_lsp-{VERSION}-py3-none-any.whl":
                return f"no such wheel: pip wheel builds gpa_lsp-{VERSION}-py3-none-any.whl"
        elif not (ROOT / base).exists():
            return f"{base} does not exist"
        unknown = extras - EXTRAS
        return f"gpa-lsp has no extra {sorted(unknown)}" if unknown else None
    name = _name(base)
    if name == "gpa-lsp":
        return "gpa-lsp is not on PyPI: install the repository (or its wheel) by path"
    if name not in KNOWN:
        return f"{name} is not a package gpa-lsp installs (add it to pyproject.toml or install by path)"
    return None


def test_every_pip_install_names_something_that_exists():
    found = instructions()
    files = {f for f, *_ in found}
    assert {"README.md", "editors/neovim/README.md", "editors/neovim/init.lua",
            "editors/vscode/src/extension.ts", "editors/vscode/README.md"} <= files
    bad = [f"{f}:{n}: {spec}: {why}  ({text})" for f, n, text, specs in found for spec in specs
           if (why := check(f, text, spec))]
    assert not bad, "\n".join(bad)


def test_the_checker_refuses_what_is_not_true():
    assert check("editors/x.md", "pip install gpa-lsp", "gpa-lsp")
    assert check("editors/x.md", "pip install -e .", ".")                    # from where?
    assert check("README.md", "pip install '.[gpu]'", ".[gpu]")              # no such extra
    assert check("x.md", "pip install leftpad", "leftpad")
    assert check("x.md", "pip install gpa_lsp-9.9-py3-none-any.whl", "gpa_lsp-9.9-py3-none-any.whl")
    assert check("x.md", "", PLACEHOLDER + "[cupti]") is None
    assert check("x.md", "pip install nvidia-cuda-cupti", "nvidia-cuda-cupti") is None
    assert check("README.md", "pip install .whl/*.whl", ".whl/*.whl")          # README fetches no wheels
    assert check("scripts/gpu/editor_latency.sh", "", ".whl/*.whl") is None      # its comment fetches them


def test_the_placeholder_and_the_hints_at_run_time(monkeypatch):
    """'/path/to/gpa-lsp' stands for this repository; gpa_lsp.install's hints name it or the wheel."""
    from gpa_lsp import install
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == "gpa-lsp"
    assert install.source_tree() == ROOT
    cmd = install.pip_extra("cupti")
    assert "-m pip install -e" in cmd and shlex.split(cmd)[-1] == f"{ROOT}[cupti]"
    monkeypatch.setattr(install, "source_tree", lambda: None)     # as installed from the wheel
    text = install.pip_extra("cupti")
    assert PLACEHOLDER + "[cupti]" in text and f"gpa_lsp-{VERSION}-py3-none-any.whl[cupti]" in text


# ---------------------------------------------------------------- the README's two commands

def readme_commands() -> list[str]:
    """The commands of the README's first code block (without their comments)."""
    block = (ROOT / "README.md").read_text().split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_starts_with_two_commands():
    install_and_advise, run_tests = readme_commands()
    install, advise = (c.strip() for c in install_and_advise.split("&&"))
    assert install == "python3 -m pip install -q -e ." and check("README.md", install, ".") is None
    assert advise == "gpa advise kernels/hotspot_double"
    assert run_tests == "bash scripts/test.sh"
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("bash scripts/test.sh")   # CI runs exactly that


def test_the_first_command_gives_the_advice_it_promises():
    """`gpa advise kernels/hotspot_double` from the repository root (gpa: this checkout's CLI)."""
    _, advise = (c.strip() for c in readme_commands()[0].split("&&"))
    argv = shlex.split(advise)
    assert argv[0] == "gpa"
    proc = subprocess.run([sys.executable, "-m", "gpa_lsp.cli", *argv[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Kernel calculate_temp (original.cu:13)" in proc.stdout
    first = proc.stdout.split("\n  1. ", 1)[1].splitlines()[0]
    assert first.startswith("Strength Reduction at original.cu:3") and "est." in first
    assert "change `2.0` to `2.0f` at original.cu:32" in proc.stdout


def _shim(folder: Path, name: str, body: str) -> None:
    p = folder / name
    p.write_text("#!/bin/bash\n" + body)
    p.chmod(0o755)


def _run_test_sh(tmp_path: Path, have: tuple[str, ...]) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """scripts/test.sh with a PATH of shims only: python3 and apt-get record their arguments; the
    tools in ``have`` exist (as no-ops). Nothing is installed or run for real."""
    shims = tmp_path / "bin"
    shims.mkdir()
    log = tmp_path / "calls.jsonl"
    record = f'{shlex.quote(sys.executable)} -c "import json,sys; print(json.dumps(sys.argv[1:]))" "${{0##*/}}" "$@" >> {shlex.quote(str(log))}\n'
    _shim(shims, "python3", record)
    _shim(shims, "apt-get", record)
    for tool in ("dirname", "id"):
        os.symlink(shutil.which(tool), shims / tool)
    for tool in have:
        _shim(shims, tool, "exit 0\n")
    proc = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "test.sh"), "-k", "something"], cwd=tmp_path,
                          env={"PATH": str(shims), "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60)
    calls = [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []
    return proc, calls


def test_the_second_command_installs_chromium_when_missing_and_runs_pytest_in_parallel(tmp_path):
    proc, calls = _run_test_sh(tmp_path, have=())
    assert proc.returncode == 0, proc.stderr
    assert calls[0] == ["python3", "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", ".[test]"]
    installs = [c for c in calls if c[:2] == ["apt-get", "install"]]
    assert len(installs) == 1 and {"chromium", "ripgrep", "pkg-config"} <= set(installs[0])
    assert ["apt-get", "update", "-qq"] in calls
    assert calls[-1] == ["python3", "-m", "pytest", "-q", "-ra", "-n", "logical", "--dist", "loadgroup", "-k", "something"]
    assert "pytest-xdist" in {_name(d) for d in PYPROJECT["project"]["optional-dependencies"]["test"]}


def test_the_second_command_installs_nothing_with_chromium_there(tmp_path):
    proc, calls = _run_test_sh(tmp_path, have=("chromium", "rg", "pkg-config"))
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c[0] == "apt-get" and "chromium" in c] == []
    assert calls[-1][:9] == ["python3", "-m", "pytest", "-q", "-ra", "-n", "logical", "--dist", "loadgroup"]
