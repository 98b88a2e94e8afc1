"""The counters run started during the sampling run and told the kernels through the gate file
(gpa_lsp/profile/cupti/gated.py; issue 17). No GPU: a harness stands in for both runs, doing
what the injection library does with the same environment: in a sampling run it writes probe's
recorded output (``fixtures/probe.cupti.txt.gz``, H100); in a counters run it waits for the gate
file, as gpa_inject.c does at its first context, then writes one measured launch per named
kernel. Only the plumbing is checked here (what starts when, which names arrive, what is read
back); the unit values it writes are lavamd_unroll's recorded ones, not probe's. The library's
own gate is exercised on the H100 by benchmarks/profiling/bench_one_run.py.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

import pytest

from gpa_lsp.config import Config, HarnessConfig, ProfileConfig
from gpa_lsp.profile import collect
from gpa_lsp.profile.bundle import read_bundle

FIX = Path(__file__).with_name("fixtures")
CHASE = "_Z5chasePKiPKfPfii"

HARNESS = """\
import gzip, json, os, pathlib, sys, time
out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])
log = pathlib.Path({log!r})
def note(**kw):
    with open(log, 'a') as f:
        f.write(json.dumps(kw) + '\\n')
if os.environ.get('GPA_CUPTI_MODE') == 'counters':
    note(what='counters start', t=time.time(), gate=os.environ.get('GPA_CUPTI_GATE'),
         kernels=os.environ.get('GPA_CUPTI_KERNELS'), exit=os.environ.get('GPA_CUPTI_EXIT_WHEN_DONE'))
    gate = os.environ.get('GPA_CUPTI_GATE')
    names = os.environ.get('GPA_CUPTI_KERNELS', '').split('\\n')
    if gate:
        while not os.path.exists(gate):
            time.sleep(0.005)
        names = [n for n in pathlib.Path(gate).read_text().split('\\n') if n]
    note(what='counters measure', t=time.time(), names=names)
    units = ['dram__throughput.avg.pct_of_peak_sustained_elapsed', 'lts__throughput.avg.pct_of_peak_sustained_elapsed',
             'l1tex__throughput.avg.pct_of_peak_sustained_elapsed', 'sm__throughput.avg.pct_of_peak_sustained_elapsed',
             'smsp__issue_active.avg.pct_of_peak_sustained_active']
    lines = ['V 2 130001 12'] + [f'N 1 {{i}} {{m}}' for i, m in enumerate(units)] + ['G 1 18 5 GH100']
    lines += [f'U 1 {{i + 1}} {{i}} 1 45.6362923 48.3336744 63.4367691 34.6025909 40.168129 {{n}}' for i, n in enumerate(names)]
    (out / 'cupti.txt').write_text('\\n'.join(lines + ['F 1', 'END']) + '\\n')
    sys.exit(0)
note(what='sampling start', t=time.time())
time.sleep({sampling_s})
(out / 'cupti.txt').write_bytes(gzip.decompress(pathlib.Path({txt!r}).read_bytes()))
(out / 'cubin_0000000093e6bbf9.cubin').write_bytes(pathlib.Path({cubin!r}).read_bytes())
note(what='sampling end', t=time.time())
sys.exit({sampling_rc})
"""


def _config(tmp_path, sampling_s=0.3, sampling_rc=0) -> Config:
    b = read_bundle(FIX / "probe.cupti.gpabundle")
    (cubin,) = {k.cubin for k in b.profile.kernels}
    (tmp_path / "probe.cubin").write_bytes(b.cubins[cubin])
    (tmp_path / "harness.py").write_text(HARNESS.format(
        log=str(tmp_path / "log.jsonl"), txt=str(FIX / "probe.cupti.txt.gz"), cubin=str(tmp_path / "probe.cubin"),
        sampling_s=sampling_s, sampling_rc=sampling_rc))
    return Config(root=str(tmp_path), harness=HarnessConfig(command=(sys.executable, str(tmp_path / "harness.py"))),
                  profile=ProfileConfig(throughput_collector="cupti", min_samples=0))


def _log(tmp_path) -> list[dict]:
    return [json.loads(l) for l in (tmp_path / "log.jsonl").read_text().splitlines()]


@pytest.fixture
def shared_gpu(monkeypatch):
    monkeypatch.setattr(collect, "shared_compute_mode", lambda: True)
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)


def test_counters_run_starts_before_the_sampling_run_ends_and_gets_the_hot_kernels(tmp_path, monkeypatch,
                                                                                   shared_gpu):
    monkeypatch.setenv("GPA_COUNTERS_OVERLAP", "1")
    res = collect.collect_cupti(_config(tmp_path), tmp_path / "b.gpabundle", log=lambda m: None)
    ev = {e["what"]: e for e in _log(tmp_path)}
    assert ev["counters start"]["t"] < ev["sampling end"]["t"]        # overlapped
    assert ev["counters measure"]["t"] >= ev["sampling end"]["t"]     # but measured only after it
    assert ev["counters start"]["gate"] and ev["counters start"]["kernels"] is None
    assert ev["counters start"]["exit"] == "1"
    assert ev["counters measure"]["names"] == [CHASE]                 # throughput_share 0.9: chase alone
    by = {k.name: k.throughput for k in res.profile.kernels}
    assert by[CHASE] is not None and by[CHASE].pct("l1") == pytest.approx(63.437, abs=1e-3)
    assert all(t is None for n, t in by.items() if n != CHASE)
    m = read_bundle(tmp_path / "b.gpabundle").manifest
    assert m["throughput"]["collector"] == "cupti" and "2 kernel(s)" in m["throughput"]["unmeasured"]


@pytest.mark.parametrize("mode", [None, "0", "2"])
def test_without_overlap_the_counters_run_follows_with_the_names_in_its_environment(tmp_path, monkeypatch,
                                                                                   shared_gpu, mode):
    if mode is None:
        monkeypatch.delenv("GPA_COUNTERS_OVERLAP", raising=False)      # the default: off
    else:
        monkeypatch.setenv("GPA_COUNTERS_OVERLAP", mode)              # "2" was the config image first: gone
    collect.collect_cupti(_config(tmp_path), tmp_path / "b.gpabundle", log=lambda m: None)
    ev = {e["what"]: e for e in _log(tmp_path)}
    assert ev["counters start"]["t"] >= ev["sampling end"]["t"]
    assert ev["counters start"]["gate"] is None and ev["counters start"]["kernels"] == CHASE


def test_exclusive_gpu_never_overlaps(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_COUNTERS_OVERLAP", "1")
    monkeypatch.setattr(collect, "shared_compute_mode", lambda: False)
    said = []
    collect.collect_cupti(_config(tmp_path), tmp_path / "b.gpabundle", log=said.append)
    ev = {e["what"]: e for e in _log(tmp_path)}
    assert ev["counters start"]["gate"] is None and any("exclusive compute mode" in m for m in said)


def test_a_failed_sampling_run_kills_the_waiting_counters_run(tmp_path, monkeypatch, shared_gpu):
    monkeypatch.setenv("GPA_COUNTERS_OVERLAP", "1")
    with pytest.raises(Exception, match="exited with code 3"):
        collect.collect_cupti(_config(tmp_path, sampling_rc=3), tmp_path / "b.gpabundle", log=lambda m: None)
    time.sleep(0.3)
    ev = {e["what"]: e for e in _log(tmp_path)}
    assert "counters start" in ev and "counters measure" not in ev   # killed at the gate
    assert not Path(ev["counters start"]["gate"]).parent.exists()    # and its folder removed
