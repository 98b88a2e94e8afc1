"""`gpa doctor`: every check with its status and fix, exit 0 when `gpa advise` can run; on this
machine (no GPU) it says so and does not crash; the driver, GPU and counter cases are simulated."""

import json

from gpa_lsp.cli import main
from gpa_lsp.commands import doctor
from gpa_lsp.errors import ToolNotFound
from gpa_lsp.profile import gpu_check

NAMES = ["python", "nvcc", "nvdisasm", "cuobjdump", "ncu", "cupti", "c compiler", "driver", "gpu", "counters", "tables"]


class FakeCuda:
    """A libcuda through ctypes: cuInit's result, the driver version and the device count (no
    cuGetErrorName: the codes gpu_check tells apart are known by number)."""

    def __init__(self, init_rc=0, version=13000, count=1):
        self.init_rc, self.version, self.count = init_rc, version, count

    def cuDriverGetVersion(self, ref):
        ref._obj.value = self.version
        return 0

    def cuInit(self, flags):
        return self.init_rc

    def cuDeviceGetCount(self, ref):
        ref._obj.value = self.count
        return 0


def _driver(monkeypatch, lib, nodes=("/dev/nvidia0",)):
    monkeypatch.setattr(gpu_check, "_device_nodes", lambda: tuple(nodes))
    monkeypatch.setattr(gpu_check, "_load_libcuda",
                        lambda: (lib, "libcuda.so.1", "") if lib else (None, None, "libcuda.so.1: cannot open"))


def _json(capsys):
    rc = main(["doctor", "--json"])
    data = json.loads(capsys.readouterr().out)
    return rc, {c["name"]: c for c in data["checks"]}, data["ready"]


def test_this_machine_every_check_and_exit_code(capsys):
    rc, checks, ready = _json(capsys)
    assert list(checks) == NAMES
    for c in checks.values():
        assert c["status"] in ("ok", "missing", "warning", "n/a") and c["detail"]
        assert c["status"] in ("ok", "n/a") or c["fix"], c          # a problem always says what to do
    assert checks["nvdisasm"]["status"] == "ok"                      # a dependency of gpa-lsp
    assert rc == 0 and ready["advise"]
    if not gpu_check.driver_status().ok:                             # CI: no GPU, said plainly
        assert checks["gpu"]["status"] == "missing" and "no NVIDIA" in checks["gpu"]["detail"]
        assert not ready["profile_cupti"] and not ready["profile_ncu"]
        main(["doctor"])
        out = capsys.readouterr().out
        assert "recording a profile needs a GPU machine" in out and "gpa advise (replay a recorded bundle)  ready" in out


def test_no_driver_no_device(monkeypatch, capsys):
    _driver(monkeypatch, None, nodes=())
    rc, checks, ready = _json(capsys)
    assert rc == 0 and ready["advise"] and not ready["profile_cupti"]
    assert checks["driver"]["status"] == "missing" and "libcuda.so.1" in checks["driver"]["detail"]
    assert "no /dev/nvidia*" in checks["gpu"]["detail"]
    assert checks["counters"]["status"] == "n/a"


def test_driver_too_old(monkeypatch, capsys):
    _driver(monkeypatch, FakeCuda(init_rc=35, version=12020))
    rc, checks, _ = _json(capsys)
    assert checks["driver"]["status"] == "missing"
    assert "too old" in checks["driver"]["detail"] and "CUDA 12.2" in checks["driver"]["detail"]
    assert "update the NVIDIA driver" in checks["driver"]["fix"]


def test_counters_restricted_to_admins(monkeypatch, capsys):
    _driver(monkeypatch, FakeCuda())
    monkeypatch.setattr("gpa_lsp.profile.device.query_device", lambda: None)
    monkeypatch.setattr("gpa_lsp.profile.harness.profiling_admin_only", lambda: True)
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 1000)
    rc, checks, ready = _json(capsys)
    assert checks["driver"]["status"] == "ok" and "CUDA 13.0" in checks["driver"]["detail"]
    assert checks["gpu"]["status"] == "ok" and "1 device" in checks["gpu"]["detail"]
    assert checks["counters"]["status"] == "missing"
    assert "NVreg_RestrictProfilingToAdminUsers=0" in checks["counters"]["fix"]
    assert not ready["profile_cupti"] and not ready["profile_ncu"]


def test_missing_nvdisasm_fails_advise(monkeypatch, capsys):
    import gpa_lsp.toolchain as tc
    real = tc.find_tool

    def find_tool(name, explicit=None):
        if name == "nvdisasm":
            raise ToolNotFound("nvdisasm was not found", tc._HINTS["nvdisasm"])
        return real(name, explicit)
    monkeypatch.setattr(tc, "find_tool", find_tool)
    rc, checks, ready = _json(capsys)
    assert rc == 1 and not ready["advise"]
    assert checks["nvdisasm"]["status"] == "missing" and "nvidia-cuda-nvdisasm" in checks["nvdisasm"]["fix"]
    main(["doctor"])
    assert "gpa advise cannot run here" in capsys.readouterr().out


def test_driver_status_real_call_does_not_raise():
    st = gpu_check.driver_status()
    assert (st.problem is None) == st.ok
    if not st.ok:
        assert st.hint


def test_a_hung_tool_version_leaves_no_child_behind(tmp_path, monkeypatch):
    """``nvdisasm --version`` that hangs (a wrapper script whose child never ends): the check gives no
    version after its timeout, and the script's child is killed with it (the whole process group;
    ``subprocess.run``'s timeout killed only the script and the child outlived gpa doctor)."""
    import time
    from pathlib import Path

    from process_state import alive

    pidfile = tmp_path / "child.pid"
    tool = tmp_path / "nvdisasm"
    tool.write_text(f'#!/bin/sh\nsleep 600 & echo $! > "{pidfile}"; wait\n')
    tool.chmod(0o755)
    monkeypatch.setattr(doctor, "VERSION_TIMEOUT_S", 1.0)
    assert doctor._version([str(tool), "--version"], r"release ([\d.]+)") == ""
    child = int(Path(pidfile).read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the hung tool's child outlived the version check"


def test_the_probe_tables_this_gpu_gets(monkeypatch, capsys):
    """With a GPU, doctor says whether the unit models' tables were measured on it: an H100 and an
    H200 have their own; a GH200 (the H100's chip, probed by no one) the H100's, said with what to
    run for its own; a GPU of no probed chip none (the sample-based estimates only)."""
    from gpa_lsp.profile.model import Device
    _driver(monkeypatch, FakeCuda())
    monkeypatch.setattr("gpa_lsp.profile.harness.profiling_admin_only", lambda: False)
    seen = {}
    for dev in (Device("NVIDIA H100 80GB HBM3", 90, 132), Device("NVIDIA H200", 90, 132),
                Device("NVIDIA GH200 480GB", 90, 132), Device("NVIDIA A100-SXM4-80GB", 80, 108)):
        monkeypatch.setattr("gpa_lsp.profile.device.query_device", lambda d=dev: d)
        rc, checks, ready = _json(capsys)
        seen[dev.name] = checks["tables"]
        assert rc == 0 and ready["profile_cupti"] and ready["advise"]      # informative: it gates nothing
        assert checks["tables"]["needed_for"] == []
    assert seen["NVIDIA H100 80GB HBM3"]["status"] == "ok" and seen["NVIDIA H200"]["status"] == "ok"
    gh200 = seen["NVIDIA GH200 480GB"]
    assert gh200["status"] == "warning" and "loop-free DRAM roof" in gh200["detail"]
    assert "NVIDIA H100 80GB HBM3" in gh200["detail"] and "benchmarks/coalescing/record.sh" in gh200["fix"]
    other = seen["NVIDIA A100-SXM4-80GB"]
    assert other["status"] == "warning" and "no probe tables of its chip" in other["detail"]
