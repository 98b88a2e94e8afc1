"""What the CUPTI collector asks of the injection library, and how it picks who measures unit
throughput (issue 17). No GPU: these check the settings handed to the harness and the
fallback's notes; the counters themselves are checked on recorded H100 output in test_counters.py.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from gpa_lsp.config import Config, ProfileConfig, from_mapping
from gpa_lsp.errors import ConfigError, ProfilingError
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import hw_buffer_bytes, sampling_env, throughput_pass
from gpa_lsp.profile.cupti import counters

ROOT = Path(__file__).resolve().parents[2]
LAVAMD = ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle"
HW_BUFFER = ROOT / "benchmarks" / "profiling" / "hw_buffer.h100.json"   # bench_hw_buffer.py on the H100


def test_hardware_buffer_shrinks_with_the_period_down_to_64_mb():
    assert hw_buffer_bytes(10) == hw_buffer_bytes(12) == 512 << 20      # CUPTI's default up to 2^12
    assert hw_buffer_bytes(13) == 256 << 20 and hw_buffer_bytes(14) == 128 << 20
    assert hw_buffer_bytes(15) == hw_buffer_bytes(20) == 64 << 20       # 64 MB only from 2^15 upward


def test_rule_at_2_12_is_the_smallest_buffer_that_lost_no_samples_on_the_h100():
    # 3 harnesses x 4 sizes x 3 runs at 2^12: a size is safe on a harness when no run filled the
    # buffer and its median samples are within 1% of 512 MB's (CUPTI's own dropped count stays 0
    # when the buffer fills: the full flag and the samples are what tell)
    doc = json.loads(HW_BUFFER.read_text())
    assert doc["period"] == 12 and set(doc["projects"]) == {"probe", "restrict_fir", "long_1s"}
    safe_everywhere = None
    for name in doc["projects"]:
        by = _sizes(doc, name)
        assert all(r["rc"] == 0 and r["dropped"] == 0 for runs in by.values() for r in runs)
        assert sorted(by) == [64, 128, 256, 512] and all(len(v) == 3 for v in by.values())
        full = statistics.median(r["samples"] for r in by[512])
        safe = {mb for mb, runs in by.items()
                if not any(r["hardware_buffer_full"] for r in runs)
                and abs(statistics.median(r["samples"] for r in runs) / full - 1) < 0.01}
        assert 512 in safe
        safe_everywhere = safe if safe_everywhere is None else safe_everywhere & safe
    # probe and restrict_fir lose nothing at 64 MB; long_1s (1.2 s, 250 rounds) fills anything
    # under 512 MB and keeps 6.2 M of 46.1 M samples: so 512 MB stays at 2^12
    assert 64 in {mb for mb, runs in _sizes(doc, "probe").items() if not any(r["hardware_buffer_full"] for r in runs)}
    assert min(safe_everywhere) << 20 == hw_buffer_bytes(12)


def _sizes(doc: dict, name: str) -> dict[int, list[dict]]:
    by: dict[int, list[dict]] = {}
    for run in doc["projects"][name]["runs"]:
        by.setdefault(run["mb"], []).append(run)
    return by


def test_environment_sizes_the_hardware_buffer_for_every_project(monkeypatch):
    # what bench_hw_buffer.py varies: gpa's own environment overrides the rule, at any period
    monkeypatch.setenv("GPA_CUPTI_HW_BYTES", str(128 << 20))
    assert sampling_env(Config(), 12)["GPA_CUPTI_HW_BYTES"] == str(128 << 20)
    assert sampling_env(Config(), 15)["GPA_CUPTI_HW_BYTES"] == str(128 << 20)
    monkeypatch.setenv("GPA_CUPTI_HW_BYTES", "")
    assert sampling_env(Config(), 12)["GPA_CUPTI_HW_BYTES"] == str(hw_buffer_bytes(12))
    for bad in ("64MB", "0", "-1"):
        monkeypatch.setenv("GPA_CUPTI_HW_BYTES", bad)
        with pytest.raises(ProfilingError, match="GPA_CUPTI_HW_BYTES"):
            sampling_env(Config(), 12)


def test_sampling_run_names_the_configured_kernels_to_the_library():
    cfg = Config(profile=ProfileConfig(kernels=("stencil", "ns::fir<float, 4>"), sampling_period=15))
    env = sampling_env(cfg, 15)
    assert env["GPA_CUPTI_SAMPLING_PERIOD"] == "15" and env["GPA_CUPTI_HW_BYTES"] == str(64 << 20)
    # one name a line: C++ names hold commas and spaces
    assert env["GPA_CUPTI_KERNELS"].split("\n") == ["stencil", "ns::fir<float, 4>"]
    assert "GPA_CUPTI_KERNELS" not in sampling_env(Config(), 12)          # no filter: every kernel sampled
    # more names than the library holds: sample everything rather than a silent subset
    many = Config(profile=ProfileConfig(kernels=tuple(f"k{i}" for i in range(counters.MAX_KERNEL_NAMES + 1))))
    assert "GPA_CUPTI_KERNELS" not in sampling_env(many, 12)


def test_counters_run_measures_the_named_kernels_and_may_end_early():
    env = counters.env(["_Z4saxpyPfS_fi", "_Z4saxpyPfS_fi", "bad\nname", "_Z6conv1dPfS_S_ii"])
    assert env["GPA_CUPTI_MODE"] == "counters"
    assert env["GPA_CUPTI_KERNELS"].split("\n") == ["_Z4saxpyPfS_fi", "_Z6conv1dPfS_S_ii"]
    assert env["GPA_CUPTI_EXIT_WHEN_DONE"] == "1" and env["GPA_CUPTI_COUNTER_LAUNCHES"] == "1"
    assert env["GPA_CUPTI_METRICS"].split(",")[0] == "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    # without names nothing says when all is measured: the harness runs to its end
    assert "GPA_CUPTI_EXIT_WHEN_DONE" not in counters.env([])


def test_throughput_collector_is_checked():
    assert Config().profile.throughput_collector == "auto"
    got = from_mapping({"profile": {"throughput_collector": "ncu"}})
    assert got.profile.throughput_collector == "ncu"
    with pytest.raises(ConfigError, match="throughput_collector"):
        from_mapping({"profile": {"throughput_collector": "nsight"}})


def _config(tmp_path, how: str) -> Config:
    # no harness and no ncu here: each way must fail, and say so
    return Config(root=str(tmp_path), profile=ProfileConfig(ncu=str(tmp_path / "no-ncu-here"),
                                                            throughput_collector=how))


def test_auto_falls_back_to_ncu_and_says_what_each_said(tmp_path):
    b = read_bundle(LAVAMD)
    profile, note, by = throughput_pass(_config(tmp_path, "auto"), b.profile, None, log=lambda m: None,
                                        with_collector=True)
    assert profile is b.profile and by is None
    assert "with CUPTI" in note and "no harness to run" in note and "ncu" in note


def test_each_collector_alone_reports_only_its_own_failure(tmp_path):
    b = read_bundle(LAVAMD)
    _, note = throughput_pass(_config(tmp_path, "cupti"), b.profile, None, log=lambda m: None)
    assert "no harness to run" in note and "no-ncu-here" not in note
    _, note = throughput_pass(_config(tmp_path, "ncu"), b.profile, None, log=lambda m: None)
    assert "with CUPTI" not in note and "ncu" in note
