"""Every install instruction in the repository is true: each `pip install` names a path that holds
gpa-lsp (the repository, '/path/to/gpa-lsp' standing for it, or the wheel `pip wheel` builds from
it), an extra gpa-lsp has, or a package gpa-lsp itself installs from PyPI; never `gpa-lsp` by name
(it is not on PyPI)."""

from __future__ import annotations

import re
import shlex
import subprocess
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
_CUT = re.compile(r"\s#|`|\"|\s\(|&&|;|\)|,|:\s|\s-{1,2}\s")


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
                specs = [w for w in words if not w.startswith("-")]
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
