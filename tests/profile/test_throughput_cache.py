"""The throughput cache (gpa_lsp/profile/cupti/throughput_cache.py): a kernel measured before with
the same code, launch, device and harness takes its kept unit throughput, and the counters run is
not started when every kernel to measure hits.

Real data: the cubins are built here with nvcc (two kernels and a device function, in variants);
the collection end to end runs a harness standing in for the GPU (no GPU here): a sampling run
writes probe's output recorded on the H100 (``fixtures/probe.cupti.txt.gz``) and its cubin, a
counters run writes one measured launch per named kernel (lavamd_unroll's figures, recorded by
the counters run on the H100: ``fixtures/counters.h100.json.gz``) and notes that it ran.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpa_lsp.config import Config, HarnessConfig, ProfileConfig
from gpa_lsp.profile import collect
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.cubins import code_hash
from gpa_lsp.profile.cupti import counters, throughput_cache
from gpa_lsp.profile.model import Device, Kernel, Launch, Profile

FIX = Path(__file__).with_name("fixtures")
CHASE = "_Z5chasePKiPKfPfii"
KA, KB = "_Z2kaPKfPfi", "_Z2kbPKfPfi"

SOURCE = """\
__constant__ float coef[4] = {{1, 2, 3, 4}};
__device__ __noinline__ float helper(float x) {{ return x * coef[1] + {helper}; }}
__global__ void ka(const float *in, float *out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = helper(in[i]) * {ka};
}}
__global__ void kb(const float *in, float *out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + {kb};
}}
"""


@pytest.fixture(scope="module")
def variants(build_cubin):
    def built(prefix="", **kw):
        return build_cubin(prefix + SOURCE.format(**{"helper": 1, "ka": 1, "kb": 1, **kw})).read_bytes()
    return {"base": built(), "kb": built(kb=2), "ka": built(ka=2), "helper": built(helper=2),
            "moved": built(prefix="// a comment moves every line\n\n")}


def test_code_hash_follows_the_kernels_own_code_and_what_it_may_call(variants):
    h = {name: (code_hash(data, KA), code_hash(data, KB)) for name, data in variants.items()}
    assert all(a and b for a, b in h.values()) and h["base"][0] != h["base"][1]
    assert h["kb"] == (h["base"][0], h["kb"][1]) and h["kb"][1] != h["base"][1]      # a sibling changed: ka stays
    assert h["ka"][0] != h["base"][0] and h["ka"][1] == h["base"][1]
    assert h["helper"][0] != h["base"][0]                                               # its device function changed
    assert h["moved"] == h["base"]                                                      # lines moved, code did not
    assert hashlib.sha256(variants["moved"]).digest() != hashlib.sha256(variants["base"]).digest()
    assert code_hash(variants["base"], "_Z6helperf") is None                            # not a kernel
    assert code_hash(b"not an elf", KA) is None


def _profile(cubin: bytes, grid=(64, 1, 1), device="NVIDIA H100 80GB HBM3") -> tuple[Profile, dict[str, bytes]]:
    sha = hashlib.sha256(cubin).hexdigest()
    k = Kernel(name=KA, demangled="ka(const float*, float*, int)", cubin=sha,
               launches=(Launch(grid=grid, block=(256, 1, 1), registers=16),))
    return Profile(device=Device(name=device, sm=90, sm_count=132), kernels=(k,), pcs=(), collector="cupti"), {sha: cubin}


def test_the_key_changes_with_the_code_the_launch_the_device_the_harness_and_the_metrics(variants):
    def key(cubin, harness="h", metrics=counters.METRICS, **kw):
        p, cubins = _profile(cubin, **kw)
        return throughput_cache.kernel_key(p, p.kernels[0], cubins, harness, metrics)

    base = key(variants["base"])
    assert base is not None
    assert key(variants["kb"]) == base and key(variants["moved"]) == base
    assert len({base, key(variants["ka"]), key(variants["helper"]), key(variants["base"], grid=(128, 1, 1)),
                key(variants["base"], device="NVIDIA H200"), key(variants["base"], harness="other"),
                key(variants["base"], metrics=counters.METRICS[:2])}) == 7
    p, _ = _profile(variants["base"])
    assert throughput_cache.kernel_key(p, p.kernels[0], {}, "h", counters.METRICS) is None          # no cubin
    bare = replace(p.kernels[0], launches=())
    assert throughput_cache.kernel_key(p, bare, {p.kernels[0].cubin: variants["base"]}, "h", counters.METRICS) is None


def test_a_damaged_cache_is_no_cache(tmp_path):
    path = tmp_path / "c.json"
    for text in ("{", "[]", json.dumps({"k": {"values": {"m": "x"}}}), json.dumps({"k": {"values": {}}})):
        path.write_text(text)
        assert throughput_cache.lookup(path, "k") is None
    throughput_cache.remember(path, {"k": {"m": 1.5}})
    assert throughput_cache.lookup(path, "k")[0] == {"m": 1.5}


HARNESS = """\
import gzip, json, os, pathlib, sys
out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])
if os.environ.get('GPA_CUPTI_MODE') == 'counters':
    names = [n for n in os.environ.get('GPA_CUPTI_KERNELS', '').split('\\n') if n]
    with open({log!r}, 'a') as f:
        f.write(json.dumps(names) + '\\n')
    values = json.loads({values!r})
    refused = os.environ.get('STANDIN_REFUSE', '').split(',')
    metrics = [m for m in os.environ['GPA_CUPTI_METRICS'].split(',') if m not in refused]
    lines = ['V 2 130001 12'] + [f'E 1 1 ConfigAddMetrics:{{m}}' for m in refused if m]
    lines += [f'N 1 {{i}} {{m}}' for i, m in enumerate(metrics)]
    lines += [f'U 1 {{i + 1}} {{i}} 1 ' + ' '.join(repr(values[m]) for m in metrics) + f' {{n}}'
              for i, n in enumerate(names)]
    (out / 'cupti.txt').write_text('\\n'.join(lines + ['F 1', 'END']) + '\\n')
    sys.exit(0)
(out / 'cupti.txt').write_bytes(gzip.decompress(pathlib.Path({txt!r}).read_bytes()))
(out / 'cubin_0000000093e6bbf9.cubin').write_bytes(pathlib.Path({cubin!r}).read_bytes())
"""


def _recorded_row() -> str:
    """lavamd_unroll's measured launch (metric -> value) from the counters run recorded on the H100."""
    doc = json.loads(gzip.decompress((FIX / "counters.h100.json.gz").read_bytes()))
    ((_, values),) = counters.parse(doc["cases"]["lavamd_unroll"]["counters_txt"]).rows
    return json.dumps(values)


def _config(tmp_path, **profile) -> Config:
    b = read_bundle(FIX / "probe.cupti.gpabundle")
    (cubin,) = {k.cubin for k in b.profile.kernels}
    (tmp_path / "probe.cubin").write_bytes(b.cubins[cubin])
    (tmp_path / "harness.py").write_text(HARNESS.format(log=str(tmp_path / "counters.jsonl"), values=_recorded_row(),
                                                        txt=str(FIX / "probe.cupti.txt.gz"),
                                                        cubin=str(tmp_path / "probe.cubin")))
    return Config(root=str(tmp_path), harness=HarnessConfig(command=(sys.executable, str(tmp_path / "harness.py"))),
                  profile=ProfileConfig(throughput_collector="cupti", min_samples=0, **profile))


def _counters_runs(tmp_path) -> list[list[str]]:
    log = tmp_path / "counters.jsonl"
    return [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []


def _collect(config, tmp_path):
    res = collect.collect_cupti(config, tmp_path / "b.gpabundle", log=lambda m: None)
    return res, read_bundle(tmp_path / "b.gpabundle").manifest["throughput"]


def test_a_second_profile_of_the_same_kernels_runs_no_counters_run(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    config = _config(tmp_path)
    first, m1 = _collect(config, tmp_path)
    assert _counters_runs(tmp_path) == [[CHASE]] and m1["from_cache"] == {} and m1["collector"] == "cupti"
    kept = json.loads((tmp_path / ".gpa" / throughput_cache.FILE).read_text())
    assert len(kept) == 1 and set(next(iter(kept.values()))["values"]) == set(counters.METRICS)

    second, m2 = _collect(config, tmp_path)
    assert _counters_runs(tmp_path) == [[CHASE]]                       # no second counters run
    assert list(m2["from_cache"]) == [CHASE] and m2["from_cache"][CHASE].endswith("Z")
    assert m2["measured"] is True and m2["collector"] == "cupti" and "2 kernel(s)" in m2["unmeasured"]
    t1, t2 = ({k.name: k.throughput for k in r.profile.kernels} for r in (first, second))
    assert t2 == t1 and t2[CHASE].pct("l1") == pytest.approx(63.658, abs=1e-3) and t2[CHASE].pct("sm") is None
    # the launch's amounts are kept and served with the shares
    assert t2[CHASE].dram_bytes == 274170112 + 12690816 and t2[CHASE].duration_ns == 182304
    assert t2[CHASE].clock_hz == pytest.approx(1.94451438e9)

    # measured again: the cache turned off, or another harness (its environment)
    _collect(_config(tmp_path, throughput_cache=False), tmp_path)
    assert len(_counters_runs(tmp_path)) == 2
    other = replace(config, harness=replace(config.harness, env=(("N", "4096"),)))
    _, m3 = _collect(other, tmp_path)
    assert len(_counters_runs(tmp_path)) == 3 and m3["from_cache"] == {}


def test_the_editors_second_phase_takes_the_cache_too(tmp_path, monkeypatch):
    """add_throughput (the language server's unit-throughput phase) on a bundle collected without it."""
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    config = _config(tmp_path)
    _collect(config, tmp_path)                                           # measured, kept
    sampled = replace(config, profile=replace(config.profile, throughput=False))
    collect.collect_cupti(sampled, tmp_path / "s.gpabundle", log=lambda m: None)
    assert collect.add_throughput(config, tmp_path / "s.gpabundle") is None
    b = read_bundle(tmp_path / "s.gpabundle")
    assert len(_counters_runs(tmp_path)) == 1 and list(b.manifest["throughput"]["from_cache"]) == [CHASE]
    assert {k.name for k in b.profile.kernels if k.throughput} == {CHASE}


def test_the_editor_takes_the_cache_before_its_first_analysis(tmp_path, monkeypatch):
    """cached_throughput (the language server, before the first analysis of a save): nothing to do
    on an empty cache, the bundle completed from it once the hot kernel was measured."""
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    config = _config(tmp_path)
    sampled = replace(config, profile=replace(config.profile, throughput=False))
    collect.collect_cupti(sampled, tmp_path / "s.gpabundle", log=lambda m: None)
    before = (tmp_path / "s.gpabundle").read_bytes()
    assert collect.cached_throughput(config, tmp_path / "s.gpabundle") is False
    assert (tmp_path / "s.gpabundle").read_bytes() == before
    _collect(config, tmp_path)                                           # measured, kept
    assert collect.cached_throughput(config, tmp_path / "s.gpabundle") is True
    b = read_bundle(tmp_path / "s.gpabundle")
    assert list(b.manifest["throughput"]["from_cache"]) == [CHASE] and "2 kernel(s)" in b.manifest["throughput"]["unmeasured"]
    assert {k.name for k in b.profile.kernels if k.throughput} == {CHASE} and len(_counters_runs(tmp_path)) == 1
    off = replace(config, profile=replace(config.profile, throughput_cache=False))
    assert collect.cached_throughput(off, tmp_path / "s.gpabundle") is False


def test_figures_kept_before_the_amounts_were_measured_are_measured_again(tmp_path, monkeypatch):
    """An entry the counters run kept when it measured the unit shares alone (before the launch's
    amounts: DRAM bytes, duration, clock) lies under another key: the next profile measures again,
    and the figures it keeps then bring the amounts to the profiles after it."""
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    config = _config(tmp_path)
    sampled = replace(config, profile=replace(config.profile, throughput=False))
    collect.collect_cupti(sampled, tmp_path / "s.gpabundle", log=lambda m: None)
    b = read_bundle(tmp_path / "s.gpabundle")
    with monkeypatch.context() as m:
        m.setattr(counters, "METRICS", counters.SHARES)
        old = collect._cache_keys(config, b.profile, [CHASE], None, b.cubins)[CHASE]
    assert old != collect._cache_keys(config, b.profile, [CHASE], None, b.cubins)[CHASE]
    shares = {m: v for m, v in json.loads(_recorded_row()).items() if m in counters.SHARES}
    throughput_cache.remember(tmp_path / ".gpa" / throughput_cache.FILE, {old: shares})

    assert collect.cached_throughput(config, tmp_path / "s.gpabundle") is False
    first, m1 = _collect(config, tmp_path)
    assert _counters_runs(tmp_path) == [[CHASE]] and m1["from_cache"] == {}
    second, m2 = _collect(config, tmp_path)
    assert _counters_runs(tmp_path) == [[CHASE]] and list(m2["from_cache"]) == [CHASE]
    for res in (first, second):
        t = next(k.throughput for k in res.profile.kernels if k.name == CHASE)
        assert t.dram_bytes and t.duration_ns and t.clock_hz


def test_an_amount_cupti_refuses_does_not_keep_the_figures_out_of_the_cache(tmp_path, monkeypatch):
    """A CUPTI that refuses one of the launch's amounts (the library's E record) would refuse it
    again: the unit shares it measured are kept all the same, and the next profile runs no counters
    run (requiring every metric would run it on every profile)."""
    monkeypatch.delenv("GPA_CUPTI_HW_BYTES", raising=False)
    config = _config(tmp_path)
    config = replace(config, harness=replace(config.harness, env=(("STANDIN_REFUSE", "gpu__time_duration.sum"),)))
    first, m1 = _collect(config, tmp_path)
    second, m2 = _collect(config, tmp_path)
    assert _counters_runs(tmp_path) == [[CHASE]] and list(m2["from_cache"]) == [CHASE]
    for res in (first, second):
        t = next(k.throughput for k in res.profile.kernels if k.name == CHASE)
        assert t.duration_ns is None and t.dram_bytes and t.pct("l1") == pytest.approx(63.658, abs=1e-3)
