"""`gpa profile` without a usable GPU says so before it builds or runs anything, and a missing CUPTI
names the extra that brings it."""

import sys

import pytest

from gpa_lsp.commands.profile import main
from gpa_lsp.profile import gpu_check
from gpa_lsp.profile.cupti import builder

from .test_doctor import FakeCuda, _driver


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPA_SKIP_GPU_CHECK", raising=False)
    (tmp_path / "gpa.toml").write_text(
        f'[build]\ncommand = ["{sys.executable}", "-c", "open(\'built\', \'w\')"]\n'
        f'[harness]\ncommand = ["{sys.executable}", "-c", "open(\'ran\', \'w\')"]\n')
    return tmp_path


def _profile(project, capsys, *args):
    rc = main([str(project), *args])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_no_driver_no_device(project, capsys, monkeypatch, collector):
    _driver(monkeypatch, None, nodes=())
    rc, err = _profile(project, capsys, "--collector", collector)
    assert rc == 2
    assert f"cannot profile with {collector}: no NVIDIA driver and no NVIDIA device" in err
    assert "the harness was not run" in err and "gpa advise" in err
    assert not (project / "ran").exists() and not (project / "built").exists()


def test_driver_without_device(project, capsys, monkeypatch):
    _driver(monkeypatch, FakeCuda(init_rc=100), nodes=())
    rc, err = _profile(project, capsys)
    assert rc == 2 and "sees no CUDA device" in err and not (project / "ran").exists()


def test_driver_too_old(project, capsys, monkeypatch):
    _driver(monkeypatch, FakeCuda(init_rc=35, version=12040))
    rc, err = _profile(project, capsys)
    assert rc == 2 and "too old for this CUDA (driver supports CUDA 12.4)" in err
    assert "update the NVIDIA driver" in err and not (project / "ran").exists()


def test_this_machine(project, capsys):
    """On a machine without a GPU (CI) the real check stops the run the same way."""
    if gpu_check.driver_status().ok:
        pytest.skip("this machine has a usable GPU")
    rc, err = _profile(project, capsys)
    assert rc == 2 and "the harness was not run" in err and not (project / "ran").exists()


def test_missing_cupti_names_the_extra(project, capsys, monkeypatch):
    _driver(monkeypatch, FakeCuda())
    monkeypatch.setattr(builder, "candidates", lambda: [])
    rc, err = _profile(project, capsys, "--collector", "cupti")
    assert rc == 2 and "CUPTI (cupti_pcsampling.h and libcupti.so) was not found" in err
    hint = next(l for l in err.splitlines() if l.startswith("gpa: hint:"))
    assert "cupti extra" in hint and "-m pip install -e" in hint and "[cupti]" in hint
    assert 'collector = "ncu"' in hint
    assert not (project / "ran").exists() and not (project / "built").exists()


def test_skip_check_for_a_harness_that_fakes_the_gpu(project, capsys, monkeypatch):
    _driver(monkeypatch, None, nodes=())
    monkeypatch.setenv("GPA_SKIP_GPU_CHECK", "1")
    monkeypatch.setattr(builder, "candidates", lambda: [])
    rc, err = _profile(project, capsys, "--collector", "cupti")
    assert rc == 2 and "cannot profile" not in err and "CUPTI" in err
