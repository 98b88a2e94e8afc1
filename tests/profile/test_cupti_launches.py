"""CUPTI launch records: kernel activity records (registers, static shared memory, durations) joined to the
launch callbacks by correlation id, one sampled context per device, periodic drains. The raw outputs were
recorded on an H200 (driver 580, CUPTI 13.0.1) by scripts/gpu/validate_activity.sh (hotspot_double) and
scripts/gpu/two_contexts.cu (two driver-API contexts; a 0.6 s and a 0.3 s `spin` kernel)."""

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.cupti import builder
from gpa_lsp.profile.cupti.reader import read_output

FIXTURES = Path(__file__).with_name("fixtures")
REPO = Path(__file__).resolve().parents[2]
HOTSPOT = "_Z14calculate_tempPKfS0_Pfiifffff"


def _hotspot_raw(tmp_path):
    b = read_bundle(FIXTURES / "hotspot_double.cupti.gpabundle")
    (tmp_path / "cupti.txt").write_bytes(gzip.open(FIXTURES / "hotspot_double.cupti.txt.gz").read())
    (cubin,) = b.cubins.values()
    (tmp_path / f"cubin_{b.profile.kernels[0].cubin_crc:016x}.cubin").write_bytes(cubin)
    return b


def test_hotspot_launches_carry_registers_shared_memory_and_durations(tmp_path):
    b = _hotspot_raw(tmp_path)
    run = read_output(tmp_path)
    assert run.format == 2 and run.kernel_records == 3 and run.errors == [] and run.complete
    (k,) = run.profile.kernels
    assert k.name == HOTSPOT and len(k.launches) == 3
    for l in k.launches:
        assert l.grid == (342, 171, 1) and l.block == (32, 32, 1) and l.dynamic_shared == 0
        assert l.registers == 32 and l.static_shared == 8192      # 2 x 32x32 floats of __shared__
        assert 500_000 < l.duration_ns < 700_000
    # the recorded bundle holds the same launches (what `gpa profile` wrote on the GPU machine)
    assert run.profile.kernels == b.profile.kernels


def test_hotspot_launches_agree_with_ncu_launch_stats():
    cupti = read_bundle(FIXTURES / "hotspot_double.cupti.gpabundle").profile.kernel(HOTSPOT)
    ncu = read_bundle(REPO / "kernels/hotspot_double/recorded/ncu.gpabundle").profile.kernel(HOTSPOT)
    n = ncu.launches[0]
    for l in cupti.launches:
        assert (l.grid, l.block, l.registers) == (n.grid, n.block, n.registers)
        # ncu prints static shared memory in KB with 3 digits (8.19 KB -> 8190 B)
        assert abs(l.static_shared - n.static_shared) <= 10
        # ncu replays the launch with its own clock control and cache flushes: same order, not the same time
        assert 0.7 < l.duration_ns / n.duration_ns < 1.3


def test_two_contexts_one_sampled_both_traced():
    run = read_output(FIXTURES / "two_contexts")
    assert run.contexts == ("1",)          # PC sampling configured on the first context only
    assert run.errors == ["context 2 was not sampled (launches only): CUPTI samples one context per device "
                          "at a time, and context 1 had device 0"]
    spin = run.profile.kernel("_Z4spinPfx")
    scale = run.profile.kernel("_Z5scalePff")
    # launch order across contexts is kept; the spin kernels spin for 600 and 300 ms of SM clock
    assert [l.grid for l in spin.launches] == [(132, 1, 1), (264, 1, 1)]
    assert [round(l.duration_ns / 1e6) for l in spin.launches] == [600, 300]
    assert [l.grid[0] for l in scale.launches] == [132, 132, 132, 264, 264]
    assert all(l.registers == 16 and l.static_shared == 1024 and 0 < l.duration_ns < 100_000 for l in scale.launches)
    assert all(l.registers == 16 and l.static_shared == 0 for l in spin.launches)
    # the 0.6 s kernel was drained while it ran (periodic drains), and its samples are in the profile
    exit_drains, periodic = run.drains["1"]
    assert periodic >= 5
    assert sum(p.total for p in run.profile.pcs_of("_Z4spinPfx")) > 0.9 * run.profile.total_samples


def test_activity_records_without_callbacks_and_untimed_records(tmp_path):
    """Join rules on the recorded two-context output plus three appended lines (hand-written, named as such):
    a K record with no L (a graph launch) is a launch of its own, a K with start=end=0 has no duration,
    and Y counts dropped records."""
    shutil.copytree(FIXTURES / "two_contexts", tmp_path / "o")
    text = (tmp_path / "o" / "cupti.txt").read_text().replace("END\n", "")
    text += ("K 1 900 5000 9000 16 1024 0 7 1 1 256 1 1 _Z5scalePff\n"
             "K 1 901 0 0 16 1024 0 8 1 1 256 1 1 _Z5scalePff\n"
             "Y 4\nEND\n")
    (tmp_path / "o" / "cupti.txt").write_text(text)
    run = read_output(tmp_path / "o")
    scale = run.profile.kernel("_Z5scalePff")
    assert [l.grid[0] for l in scale.launches] == [132, 132, 132, 264, 264, 7, 8]
    assert scale.launches[5].duration_ns == 4000 and scale.launches[6].duration_ns is None
    assert run.launches_seen["_Z5scalePff"] == 7 and run.activity_dropped == 4
    assert any("dropped 4 kernel activity" in e for e in run.errors)


def test_format1_launches_have_no_activity_fields(tmp_path):
    """Outputs of the first format (before kernel activity) still read: geometry only."""
    b = read_bundle(FIXTURES / "probe-run2.cupti.gpabundle")
    (tmp_path / "cupti.txt").write_bytes(gzip.open(FIXTURES / "probe.cupti.txt.gz").read())
    (cubin,) = b.cubins.values()
    (tmp_path / f"cubin_{b.profile.kernels[0].cubin_crc:016x}.cubin").write_bytes(cubin)
    run = read_output(tmp_path)
    assert run.format == 1 and run.kernel_records == 0
    assert all(l.duration_ns is None and l.registers == 0 for k in run.profile.kernels for l in k.launches)
    assert [len(k.launches) for k in run.profile.kernels] == [3, 3, 3]


def _newest_kernel_record(include: Path) -> str:
    text = (include / "cupti_activity.h").read_text(errors="replace")
    versions = [int(v or 1) for v in re.findall(r"\}\s*CUpti_ActivityKernel(\d*)\s*;", text)]
    return f"CUpti_ActivityKernel{max(versions)}"


def test_kernel_record_head_matches_the_installed_cupti_headers(tmp_path):
    cupti = builder.find_cupti()
    cc = builder.find_cc()
    for struct in ("CUpti_ActivityKernel4", _newest_kernel_record(cupti.include)):
        argv = builder.compile_argv(cc, cupti, tmp_path / "layout.o", shared=False) + [f"-DGPA_CHECK_LAYOUT={struct}"]
        proc = subprocess.run(argv, capture_output=True, text=True)
        assert proc.returncode == 0, f"{struct}: {proc.stderr[-2000:]}"


def test_library_uses_the_activity_api(tmp_path):
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm (binutils) is needed to check the library's imports")
    cupti = builder.find_cupti()
    so = tmp_path / "libgpa_inject.so"
    proc = subprocess.run(builder.compile_argv(builder.find_cc(), cupti, so), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    undefined = subprocess.run([nm, "-D", "-u", str(so)], capture_output=True, text=True).stdout
    for sym in ("cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityFlushAll",
                "cuptiActivityGetNextRecord", "pthread_create"):
        assert sym in undefined, sym
