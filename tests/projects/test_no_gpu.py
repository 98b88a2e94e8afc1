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


class CountingCuda(FakeCuda):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.inits = 0

    def cuInit(self, flags):
        self.inits += 1
        return super().cuInit(flags)


def test_a_driver_that_passed_is_not_started_again_until_something_changes(tmp_path, monkeypatch):
    """cuInit (0.1 s on the H100) runs once per driver, boot and device set; a change checks again."""
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPA_SKIP_GPU_CHECK", raising=False)
    lib = CountingCuda()
    _driver(monkeypatch, lib)
    gpu_check.require_gpu("cupti")
    gpu_check.require_gpu("cupti")
    assert lib.inits == 1
    lib.version = 13010                                  # another driver
    gpu_check.require_gpu("cupti")
    assert lib.inits == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")      # other devices
    gpu_check.require_gpu("cupti")
    assert lib.inits == 3
    # a driver too old is never remembered: asked again, it fails again
    old = CountingCuda(init_rc=35, version=12040)
    _driver(monkeypatch, old)
    for _ in range(2):
        with pytest.raises(Exception, match="too old for this CUDA"):
            gpu_check.require_gpu("cupti")
    assert old.inits == 2


def test_a_remembered_pass_that_went_stale_is_explained_after_the_failure(tmp_path, monkeypatch):
    """The GPU went away without a change to the driver's files: the check trusts the remembered pass,
    the harness fails, and the collector's failure is explained by the whole check, which forgets it."""
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPA_SKIP_GPU_CHECK", raising=False)
    _driver(monkeypatch, FakeCuda())
    gpu_check.require_gpu("cupti")
    assert gpu_check.explain_failure("cupti") is None        # the driver is fine: the harness's own error stands
    broken = CountingCuda(init_rc=100)                        # same driver, same nodes: the same key
    _driver(monkeypatch, broken)
    gpu_check.require_gpu("cupti")
    assert broken.inits == 0
    why = gpu_check.explain_failure("cupti")
    assert why is not None and "cannot profile with cupti: the NVIDIA driver sees no CUDA device" in why.message
    with pytest.raises(Exception, match="sees no CUDA device"):
        gpu_check.require_gpu("cupti")
