"""CUPTI's hardware buffer sized from the previous run of the same harness (issue 17).

Real data: the rule is checked against what bench_hw_buffer.py measured on the H100
(``benchmarks/profiling/hw_buffer.h100.json``), and the collector is run end to end on a harness
that replays probe's recorded library output (``fixtures/probe.cupti.txt.gz``, its cubin from the
bundle recorded in the same session), filling the buffer the way the H100 did when it is smaller
than the harness's samples need.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from gpa_lsp.config import Config, HarnessConfig, ProfileConfig
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import collect_cupti, hw_buffer_bytes
from gpa_lsp.profile.cupti import sample_volume

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).with_name("fixtures")
HW_BUFFER = ROOT / "benchmarks" / "profiling" / "hw_buffer.h100.json"


def test_sizes_picked_from_the_last_run_lost_no_samples_on_the_h100():
    """From the 512 MB runs' samples, the size picked for the next run is one at which the H100
    lost nothing on that harness (no buffer-full flag, the same samples); long_1s keeps 512 MB."""
    doc = json.loads(HW_BUFFER.read_text())
    picked = {}
    for name, proj in doc["projects"].items():
        by: dict[int, list[dict]] = {}
        for r in proj["runs"]:
            by.setdefault(r["mb"], []).append(r)
        full = statistics.median(r["samples"] for r in by[512])
        entry = {"period": 12, "samples": int(full), "hw_bytes": 512 << 20, "full": False}
        size = sample_volume.sized(entry, 12, hw_buffer_bytes(12))
        picked[name] = None if size is None else size >> 20
        if size is not None:
            runs = by[size >> 20]
            assert not any(r["hardware_buffer_full"] for r in runs), name
            assert abs(statistics.median(r["samples"] for r in runs) / full - 1) < 0.01, name
    assert picked == {"probe": 64, "restrict_fir": 64, "long_1s": None}


def test_bytes_per_sample_against_the_h200s_smallest_buffers():
    """On the H200 probe's samples fit every buffer from 8 MB (none full, the same samples within
    0.1%), so 64 B a sample is 3x what the smallest needed; long_run at 2^15 filled 16 and 32 MB,
    and the rule keeps it at the period's 64 MB (its 17 M samples need more than that)."""
    doc = json.loads(HW_BUFFER.with_name("hw_buffer.h200.json").read_text())
    probe = doc["projects"]["probe"]["runs"]
    assert {r["mb"] for r in probe} == {8, 16, 32, 64, 128} and not any(r["hardware_buffer_full"] for r in probe)
    samples = statistics.median(r["samples"] for r in probe)
    assert max(r["samples"] for r in probe) / min(r["samples"] for r in probe) < 1.001
    held = min(r["mb"] for r in probe) << 20
    assert sample_volume.BYTES_PER_SAMPLE >= 3 * held / samples
    entry = {"period": 12, "samples": int(samples), "hw_bytes": 128 << 20, "full": False}
    assert sample_volume.sized(entry, 12, hw_buffer_bytes(12)) == 64 << 20
    long_run = doc["projects"]["long_run"]["runs"]
    assert all(r["hardware_buffer_full"] == 0 for r in long_run if r["mb"] == 64)
    assert any(r["hardware_buffer_full"] for r in long_run if r["mb"] < 64)
    entry = {"period": 15, "samples": int(statistics.median(r["samples"] for r in long_run if r["mb"] == 64)),
             "hw_bytes": 64 << 20, "full": False}
    assert sample_volume.sized(entry, 15, hw_buffer_bytes(15)) is None


def test_no_entry_a_full_one_or_a_longer_period_keeps_the_periods_size():
    assert sample_volume.sized(None, 12, 512 << 20) is None
    full = {"period": 12, "samples": 1000, "hw_bytes": 512 << 20, "full": True}
    assert sample_volume.sized(full, 12, 512 << 20) is None
    small = {"period": 12, "samples": 1000, "hw_bytes": 512 << 20, "full": False}
    assert sample_volume.sized(small, 12, 512 << 20) == 64 << 20
    assert sample_volume.sized(small, 15, 64 << 20) is None      # never above the period's own size
    # a shorter period brings more samples: 2^12 -> 2^8 is 16x
    mid = {"period": 12, "samples": 300_000, "hw_bytes": 512 << 20, "full": False}
    assert sample_volume.sized(mid, 12, 512 << 20) == 64 << 20
    assert sample_volume.sized(mid, 8, 512 << 20) is None        # 4.8 M samples x 64 B: 512 MB


def test_cache_file_keeps_the_last_runs_per_harness(tmp_path):
    f = tmp_path / ".gpa" / sample_volume.FILE
    a = sample_volume.harness_key(["build/probe"], tmp_path, {}, ())
    assert a != sample_volume.harness_key(["build/probe"], tmp_path, {"N": "2"}, ())
    assert a != sample_volume.harness_key(["build/probe"], tmp_path, {}, ("chase",))
    assert sample_volume.previous(f, a) is None
    sample_volume.remember(f, a, period=12, samples=553_000, hw_bytes=512 << 20, full=False)
    assert sample_volume.previous(f, a) == {"period": 12, "samples": 553_000, "hw_bytes": 512 << 20, "full": False,
                                            "filled_at": 0}
    for i in range(sample_volume.MAX_ENTRIES + 3):
        sample_volume.remember(f, f"k{i}", period=12, samples=i, hw_bytes=1, full=False)
    assert len(json.loads(f.read_text())) == sample_volume.MAX_ENTRIES and sample_volume.previous(f, a) is None
    f.write_text("{not json")
    assert sample_volume.previous(f, a) is None                  # a broken file is no entry


HARNESS = """\
import gzip, json, os, pathlib, sys
out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])
hw = int(os.environ['GPA_CUPTI_HW_BYTES'])
text = gzip.decompress(pathlib.Path({txt!r}).read_bytes()).decode()
if hw < {fills_below}:   # what the H100 did on long_1s: the flag set, most samples gone
    text = text.replace('T 1 556533 0 0 0', 'T 1 75000 0 0 1')
(out / 'cupti.txt').write_text(text)
(out / 'cubin_0000000093e6bbf9.cubin').write_bytes(pathlib.Path({cubin!r}).read_bytes())
with open({log!r}, 'a') as f:
    f.write(json.dumps(hw) + '\\n')
"""


def _replaying(tmp_path, fills_below: int) -> Config:
    b = read_bundle(FIX / "probe.cupti.gpabundle")
    (cubin,) = {k.cubin for k in b.profile.kernels}
    (tmp_path / "probe.cubin").write_bytes(b.cubins[cubin])
    (tmp_path / "harness.py").write_text(HARNESS.format(txt=str(FIX / "probe.cupti.txt.gz"), fills_below=fills_below,
                                                        cubin=str(tmp_path / "probe.cubin"),
                                                        log=str(tmp_path / "hw.log")))
    return Config(root=str(tmp_path), harness=HarnessConfig(command=(sys.executable, str(tmp_path / "harness.py"))),
                  profile=ProfileConfig(throughput=False, min_samples=0))


def _sizes(tmp_path) -> list[int]:
    return [int(x) >> 20 for x in (tmp_path / "hw.log").read_text().split()]


def test_second_run_of_a_harness_gets_the_buffer_its_samples_need(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    cfg = _replaying(tmp_path, fills_below=0)
    first = collect_cupti(cfg, tmp_path / "a.gpabundle", log=lambda m: None)
    second = collect_cupti(cfg, tmp_path / "b.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [512, 64]           # 556,533 samples x 64 B -> 64 MB
    assert first.profile.total_samples == second.profile.total_samples == 556_533
    m = read_bundle(tmp_path / "b.gpabundle").manifest["cupti"]
    assert m["hardware_buffer_bytes"] == 64 << 20 and m["hardware_buffer_note"] is None
    assert not any("hardware" in n for n in second.notes)


def test_a_buffer_that_fills_is_run_again_at_the_periods_size_and_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    cfg = _replaying(tmp_path, fills_below=128 << 20)
    collect_cupti(cfg, tmp_path / "a.gpabundle", log=lambda m: None)
    got = collect_cupti(cfg, tmp_path / "b.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [512, 64, 512]      # the small one filled: sampled again with 512 MB
    assert got.profile.total_samples == 556_533    # nothing lost to the saving
    m = read_bundle(tmp_path / "b.gpabundle").manifest["cupti"]
    assert m["hardware_buffer_bytes"] == 512 << 20 and m["hardware_buffer_full"] == 0
    assert "sized from this harness's last run (64 MB) filled up 1 time(s)" in m["hardware_buffer_note"]
    assert any("sampled again with 512 MB" in n for n in got.notes)
    # and the next run is not given a buffer that filled on this harness (nor run twice again)
    collect_cupti(cfg, tmp_path / "c.gpabundle", log=lambda m: None)
    collect_cupti(cfg, tmp_path / "d.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [512, 64, 512, 128, 128]


def test_buffers_that_keep_filling_end_at_the_periods_size(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    cfg = _replaying(tmp_path, fills_below=512 << 20)
    for name in "abcde":
        collect_cupti(cfg, tmp_path / f"{name}.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [512, 64, 512, 128, 512, 256, 512, 512]


def test_an_explicit_size_wins_over_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_CUPTI_HW_BYTES", str(256 << 20))
    cfg = _replaying(tmp_path, fills_below=0)
    for name in ("a", "b"):
        collect_cupti(cfg, tmp_path / f"{name}.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [256, 256]


FAILING_ONCE = """\
import os, pathlib, sys
flag = pathlib.Path({flag!r})
if int(os.environ['GPA_CUPTI_HW_BYTES']) < (512 << 20) and not flag.exists():
    flag.write_text('x')
    out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])
    (out / 'cupti.txt').write_text('V 2 130001 12\\nE 1 999 GetData CUPTI_ERROR_UNKNOWN\\nEND\\n')
    with open({log!r}, 'a') as f:
        f.write(os.environ['GPA_CUPTI_HW_BYTES'] + '\\n')
    sys.exit(0)
exec(open({replay!r}).read())
"""


def test_a_run_that_failed_for_another_reason_does_not_shrink_the_next_runs_choice(tmp_path, monkeypatch):
    """What the H100 did when a second process set up CUPTI's profiler during a sampling run
    (bench_one_run.issue17.h100.json, overlap2): GetData failed with CUPTI_ERROR_UNKNOWN, no samples.
    The run is repeated at the period's size, but the buffer is not blamed for it."""
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    cfg = _replaying(tmp_path, fills_below=0)
    harness = tmp_path / "harness.py"                 # the same command throughout: the same cache entry
    (tmp_path / "replay.py").write_text(harness.read_text())
    collect_cupti(cfg, tmp_path / "a.gpabundle", log=lambda m: None)                  # 512 MB, recorded
    harness.write_text(FAILING_ONCE.format(flag=str(tmp_path / "failed"), log=str(tmp_path / "hw.log"),
                                           replay=str(tmp_path / "replay.py")))
    got = collect_cupti(cfg, tmp_path / "b.gpabundle", log=lambda m: None)           # 64 MB fails, then 512
    assert got.profile.total_samples == 556_533 and any("brought no samples" in n for n in got.notes)
    collect_cupti(cfg, tmp_path / "c.gpabundle", log=lambda m: None)
    assert _sizes(tmp_path) == [512, 64, 512, 64]                                    # 64 MB again
