"""The CUPTI collector: the injection library compiles against the wheel's headers, and the reader
turns real output (recorded on the H100) into the profile of the bundle recorded in the same run."""

import dataclasses
import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from gpa_lsp.errors import ProfilingError
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.cupti import builder
from gpa_lsp.profile.cupti.reader import read_output

FIXTURES = Path(__file__).with_name("fixtures")


def _cupti():
    try:
        return builder.find_cupti()
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"CUPTI headers must be installed for the tests (pip install nvidia-cuda-cupti): {exc}")


def test_injection_library_compiles_and_exports_its_entry_point(tmp_path):
    cupti = _cupti()
    cc = builder.find_cc()
    obj = tmp_path / "gpa_inject.o"
    proc = subprocess.run(builder.compile_argv(cc, cupti, obj, shared=False) + ["-Werror"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    so = tmp_path / "libgpa_inject.so"
    proc = subprocess.run(builder.compile_argv(cc, cupti, so), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "-D", "--defined-only", str(so)], capture_output=True, text=True).stdout
        assert " T InitializeInjection" in syms
        undefined = subprocess.run([nm, "-D", "-u", str(so)], capture_output=True, text=True).stdout
        assert "cuptiPCSamplingGetData" in undefined and "cuptiGetCubinCrc" in undefined
        # the counters mode (unit throughput) is built in: the Range Profiler and the host API
        assert "cuptiRangeProfilerStart" in undefined and "cuptiProfilerHostEvaluateToGpuValues" in undefined


def test_injection_library_builds_against_headers_that_include_cplusplus_string(tmp_path):
    """CUPTI 13.0.1 (the H100's torch wheel) has ``#include <string>`` in cupti_profiler_host.h:
    the build of the C library failed there until builder.py put an empty <string> first."""
    cupti = _cupti()
    inc = tmp_path / "include"
    shutil.copytree(cupti.include, inc)
    host = inc / "cupti_profiler_host.h"
    text = host.read_text()
    if "#include <string>" not in text:
        host.write_text(text.replace("#include <stddef.h>", "#include <stddef.h>\n#include <string>", 1))
    old = dataclasses.replace(cupti, include=inc)
    proc = subprocess.run(builder.compile_argv(builder.find_cc(), old, tmp_path / "lib.so"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]


def test_injection_library_is_cached_by_source_and_cupti(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path))
    cupti = _cupti()
    lib = builder.injection_library(cupti)
    assert lib.is_file() and lib.parent.parent == tmp_path / "gpa-lsp" / "cupti"
    stamp = lib.stat().st_mtime_ns
    assert builder.injection_library(cupti) == lib and lib.stat().st_mtime_ns == stamp
    assert builder.library_key(cupti) == lib.parent.name


def _raw_folder(tmp_path):
    """CUPTI's raw output of run 2 with the cubin it saved (taken back from that run's bundle)."""
    b = read_bundle(FIXTURES / "probe-run2.cupti.gpabundle")
    (tmp_path / "cupti.txt").write_bytes(gzip.open(FIXTURES / "probe.cupti.txt.gz").read())
    (cubin,) = b.cubins.values()
    crc = b.profile.kernels[0].cubin_crc
    (tmp_path / f"cubin_{crc:016x}.cubin").write_bytes(cubin)
    return b


def test_reader_reproduces_the_recorded_bundle(tmp_path):
    b = _raw_folder(tmp_path)
    run = read_output(tmp_path)
    assert run.complete and run.errors == [] and run.cupti_version == 130001
    assert run.profile.pcs == b.profile.pcs
    assert run.profile.kernels == b.profile.kernels
    assert run.profile.total_samples == 556533 == sum(p.total for p in run.profile.pcs)
    assert run.launches_seen == {"_Z5chasePKiPKfPfii": 3, "_Z7stencilPKfPfii": 3, "_Z8localarrPKfPfii": 3}
    # CUPTI's *_not_issued counts are a subset of the reason's samples at every PC
    for p in run.profile.pcs:
        all_ = p.stall_dict()
        assert all(n <= all_.get(r, 0) for r, n in p.not_issued)
    chase = [p for p in run.profile.pcs if p.function == "_Z5chasePKiPKfPfii"]
    hottest = max(chase, key=lambda p: p.total)
    assert hottest.offset == 0x1E0 and hottest.stall_dict()["long_scoreboard"] > 0.9 * hottest.total


def test_reader_kernel_filter_and_no_match(tmp_path):
    _raw_folder(tmp_path)
    run = read_output(tmp_path, kernels=["stencil"])
    assert [k.name for k in run.profile.kernels] == ["_Z7stencilPKfPfii"]
    assert {p.function for p in run.profile.pcs} == {"_Z7stencilPKfPfii"}
    with pytest.raises(ProfilingError) as err:
        read_output(tmp_path, kernels=["nosuchkernel"])
    assert "nosuchkernel" in err.value.message and "_Z5chasePKiPKfPfii" in err.value.message


def test_reader_errors(tmp_path):
    with pytest.raises(ProfilingError, match="wrote nothing"):
        read_output(tmp_path)
    (tmp_path / "cupti.txt").write_text("V 1 130001 12\nE 1 35 Enable CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\nEND\n")
    with pytest.raises(ProfilingError) as err:
        read_output(tmp_path)
    assert "refused" in err.value.message and "RestrictProfilingToAdminUsers" in err.value.hint
    (tmp_path / "cupti.txt").write_text("V 1 130001 5\nR 1 14 smsp__pcsamp_warps_issue_stalled_long_scoreboard\n"
                                        "E 1 8 GetData hardware_buffer_full\nT 1 0 0 0 1\nEND\n")
    with pytest.raises(ProfilingError) as err:
        read_output(tmp_path)
    assert "overflowed" in err.value.message and "sampling_period (now 5" in err.value.hint


def test_reader_survives_a_crash_cut_line(tmp_path):
    b = _raw_folder(tmp_path)
    text = (tmp_path / "cupti.txt").read_text()
    cut = text[: text.rindex("\nT ")] + "\nP 1 93e6bb"   # the process died mid-write, before END
    (tmp_path / "cupti.txt").write_text(cut)
    run = read_output(tmp_path)
    assert not run.complete
    assert run.profile.pcs == b.profile.pcs      # every PC line before the cut is intact
