"""Unit throughput from CUPTI's Range Profiler against Nsight Compute's, on recorded H100 output.

Real data: ``fixtures/counters.h100.json.gz`` holds the injection library's raw output
(``cupti.txt`` of the counters run) for every kernels/ case, recorded on the H100 (CUPTI
13.0.1) by benchmarks/profiling/counters_vs_ncu.py with the counters run's units as they are
(``counters.METRICS``: SM pipes left out, 10 passes), and for four cases the ``ncu --metrics`` pass
run in an earlier session beside the five unit shares. The cases' bundles
(``kernels/*/recorded/cupti.gpabundle``) hold the unit throughput ncu measured when they were
recorded (one launch, ``--clock-control none``).
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.config import Config, HarnessConfig, ProfileConfig, load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import attach_throughput, throughput_pass
from gpa_lsp.profile.cupti import counters
from gpa_lsp.profile.throughput import UNITS, Throughput, summarise

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("fixtures") / "counters.h100.json.gz"
# ncu flushes the caches before each replayed pass (--cache-control all, its default; the
# throughput pass keeps it), CUPTI's Range Profiler does not: on a launch of a few microseconds
# the DRAM and L2 shares then depend on what the replayed pass found in the L2, and they are not
# reproducible: bitonic_global's 8 us launch read DRAM 20.6% in the afternoon's recording and
# 42.1% in the evening's (SM pipes left out, so other passes), ncu 31.0%. They are not compared;
# test_short_launches_advice_does_not_lean_on_them checks that their advice does not depend on them.
SHORT_LAUNCH_NS = 20_000


@pytest.fixture(scope="module")
def recorded():
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _bundle(case: str):
    return read_bundle(ROOT / "kernels" / case / "recorded" / "cupti.gpabundle")


# Replay passes on GH100 (CUPTI 13.0.1) by the metrics a run asked for: the 9 of the first recording
# (throughput.METRICS then), the 5 unit shares (the same-session rows), and the 4 the counters run
# measures now (SM pipes alone cost 8: benchmarks/profiling/README.md).
PASSES_BY_METRICS = {9: 22, 5: 18, 4: 10}


def test_every_case_has_its_sampled_kernels_measured_and_the_run_ended_early(recorded):
    cases = recorded["cases"]
    bundles = {p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/cupti.gpabundle")}
    assert set(cases) == bundles
    for case, row in cases.items():
        run = counters.parse(row["counters_txt"])
        assert not run.errors, (case, run.errors)
        assert run.exited_early and run.complete, case    # F record, then END: the harness was cut short
        sampled = {pc.function for pc in _bundle(case).profile.pcs if pc.total}
        assert {k for k, _ in run.rows} == sampled, case
        assert run.passes == PASSES_BY_METRICS[len(run.rows[0][1])] == 10, case
        for _, vals in run.rows:
            assert set(vals) == set(counters.METRICS), case
            assert all(0.0 <= vals[m] <= 100.0 for m in counters.METRICS), case


def test_sm_pipes_bound_nothing_from_the_counters_run(recorded):
    """Why the counters run leaves SM pipes out: no optimizer's bound keeps it, and the coalescing
    model (the one reader of ``sm``) needs a duration and clock, which CUPTI's rows never bring."""
    from gpa_lsp.analysis.optimizers import REGISTRY
    assert set(counters.COUNTER_UNITS) == set(UNITS) - {"sm"}
    assert all(set(o.keeps) <= {"dram", "l2", "l1"} for o in REGISTRY)
    for row in recorded["cases"].values():
        for _, vals in counters.parse(row["counters_txt"]).rows:
            t = summarise([vals])
            assert t.pct("sm") is None and t.duration_ns is None and t.clock_hz is None


def test_units_within_5_points_of_ncus_recorded_figures(recorded):
    worst = (0.0, "")
    for case, row in recorded["cases"].items():
        run = counters.parse(row["counters_txt"])
        kernels = {k.name: k for k in _bundle(case).profile.kernels}
        for name, vals in run.rows:
            mine, theirs = summarise([vals]), kernels[name].throughput
            short = _launch_ns(kernels[name]) < SHORT_LAUNCH_NS
            for unit, pct in theirs.units:
                if unit not in counters.COUNTER_UNITS:
                    assert mine.pct(unit) is None, (case, unit)     # not measured (SM pipes)
                    continue
                d = mine.pct(unit) - pct
                if short and unit in ("dram", "l2"):
                    continue
                assert abs(d) < 5.0, (case, unit, mine.pct(unit), pct)
                worst = max(worst, (abs(d), f"{case} {unit}"))
    assert worst[0] > 1.0   # they are two measurements, not one copied


def test_same_session_units_agree_within_2_points(recorded):
    same = recorded["same_session_ncu"]
    assert len(same) == 4
    for case, row in same.items():
        assert row["ncu_note"] is None and row["note"] is None
        for name, vals in counters.parse(row["counters_txt"]).rows:
            mine, theirs = summarise([vals]), Throughput.from_json(row["ncu"][name])
            for unit, pct in theirs.units:
                assert abs(mine.pct(unit) - pct) < 2.0, (case, unit, mine.pct(unit), pct)
        # and the counters run took less than half of the ncu pass's time
        assert row["wall_s"] < 0.5 * row["ncu_wall_s"], case


def _launch_ns(kernel) -> float:
    """The kernel's launch duration: ncu's measured launch, else the activity records' mean."""
    if kernel.throughput is not None and kernel.throughput.duration_ns:
        return kernel.throughput.duration_ns
    got = [l.duration_ns for l in kernel.launches if l.duration_ns]
    return sum(got) / len(got) if got else 0.0


def _short_cases(recorded) -> list[str]:
    """The cases whose measured kernel's launch (as ncu timed it) is shorter than SHORT_LAUNCH_NS."""
    out = []
    for case, row in sorted(recorded["cases"].items()):
        ks = {k.name: k for k in _bundle(case).profile.kernels}
        if any(_launch_ns(ks[name]) < SHORT_LAUNCH_NS for name, _ in counters.parse(row["counters_txt"]).rows):
            out.append(case)
    return out


def test_short_launches_advice_does_not_lean_on_them(recorded):
    """The cases with a launch too short for reproducible DRAM and L2 shares: the same advice and
    estimates with CUPTI's shares, ncu's, or none."""
    short = _short_cases(recorded)
    assert short == ["bitonic_global", "nw_wavefront"]
    for case in short:
        b = _bundle(case)
        bare = replace(b.profile, kernels=tuple(replace(k, throughput=None) for k in b.profile.kernels))
        mine = replace(b.profile, kernels=attach_throughput(bare, counters.parse(
            recorded["cases"][case]["counters_txt"]).rows, "none").kernels)
        cfg = load(ROOT / "kernels" / case)
        got = [[(a.optimizer, a.location and a.location.line, round(a.estimated_speedup, 6)) for a in k.advice]
               for p in (b.profile, mine, bare) for k in advise_bundle(replace(b, profile=p), config=cfg).kernels]
        assert got[0] == got[1] == got[2] and got[0], case


# the cases whose advice the memory-system bound touches (the only advice unit shares can change)
BOUNDED = ("gaussian_blocks", "icp_local_array", "kmeans_assign", "lavamd_unroll", "layernorm_rows",
           "permute_divmod", "saxpy_stream")


@pytest.mark.parametrize("case", BOUNDED)
def test_same_advice_with_cuptis_shares(recorded, case):
    """Same optimizers, ranks and lines; the bounded estimates move by less than 5%."""
    b = _bundle(case)
    run = counters.parse(recorded["cases"][case]["counters_txt"])
    bare = replace(b.profile, kernels=tuple(replace(k, throughput=None) for k in b.profile.kernels))
    mine = replace(b, profile=attach_throughput(bare, run.rows, "none"))
    cfg = load(ROOT / "kernels" / case)
    before, after = advise_bundle(b, config=cfg), advise_bundle(mine, config=cfg)
    bounded = 0
    for kb, ka in zip(before.kernels, after.kernels, strict=True):
        assert [(a.optimizer, a.location and a.location.line) for a in kb.advice] == \
               [(a.optimizer, a.location and a.location.line) for a in ka.advice]
        for x, y in zip(kb.advice, ka.advice):
            assert abs(y.estimated_speedup / x.estimated_speedup - 1) < 0.05, (x.optimizer, x.estimated_speedup,
                                                                               y.estimated_speedup)
            bounded += bool(x.bounded_by or y.bounded_by)
    assert bounded, "no advice of this case is bounded by a unit: it tests nothing here"


def _replaying_harness(tmp_path, text: str, exit_code: int) -> Config:
    """A harness standing in for the GPU run: it writes a counters run recorded on the H100 where
    the injection library would, notes the environment it was given, and exits ``exit_code``."""
    (tmp_path / "recorded.txt").write_text(text)
    script = tmp_path / "harness.py"
    script.write_text(
        "import json, os, pathlib, shutil, sys\n"
        "out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])\n"
        f"shutil.copy({str(tmp_path / 'recorded.txt')!r}, out / 'cupti.txt')\n"
        f"pathlib.Path({str(tmp_path / 'env.json')!r}).write_text(json.dumps("
        "{k: v for k, v in os.environ.items() if k.startswith(('GPA_CUPTI', 'CUDA_INJECTION'))}))\n"
        f"sys.exit({exit_code})\n")
    return Config(root=str(tmp_path), harness=HarnessConfig(command=(sys.executable, str(script))),
                  profile=ProfileConfig(throughput_collector="cupti"))


def test_counters_run_reads_what_the_library_wrote_even_when_the_harness_fails_later(recorded, tmp_path):
    case = "lavamd_unroll"
    b = _bundle(case)
    bare = replace(b.profile, kernels=tuple(replace(k, throughput=None) for k in b.profile.kernels))
    cfg = _replaying_harness(tmp_path, recorded["cases"][case]["counters_txt"], exit_code=3)
    got, note, by = throughput_pass(cfg, bare, None, log=lambda m: None, with_collector=True)
    assert note is None and by == "cupti"
    k = got.kernels[0]
    assert k.throughput.busiest(("dram", "l2", "l1"))[0] == "l1" and 60 < k.throughput.pct("l1") < 68
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["GPA_CUPTI_MODE"] == "counters" and env["GPA_CUPTI_EXIT_WHEN_DONE"] == "1"
    assert env["GPA_CUPTI_KERNELS"] == k.name and env["CUDA_INJECTION64_PATH"].endswith("libgpa_inject.so")


def test_counters_run_that_measured_nothing_says_why(tmp_path):
    b = _bundle("lavamd_unroll")
    cfg = _replaying_harness(tmp_path, "", exit_code=3)
    got, note = throughput_pass(cfg, b.profile, None, log=lambda m: None)
    assert got is b.profile and "exited with code 3" in note


def test_counters_run_measures_the_hottest_kernels_holding_the_configured_share(tmp_path):
    """probe (recorded on the H100): chase holds 90.2% of the samples, stencil and localarr 4.8% and 5.0%.
    At the default share (0.9) only chase is measured; the bundle says which kernels were left."""
    from gpa_lsp.profile.collect import _sampled_kernels, _unmeasured_note
    p = read_bundle(ROOT / "tests/profile/fixtures/probe.cupti.gpabundle").profile
    chase, localarr, stencil = "_Z5chasePKiPKfPfii", "_Z8localarrPKfPfii", "_Z7stencilPKfPfii"
    assert ProfileConfig().throughput_share == 0.9
    assert _sampled_kernels(p, 0.9) == [chase]
    assert _sampled_kernels(p, 0.95) == [chase, localarr]     # 90.2% + 5.0%
    assert _sampled_kernels(p, 1.0) == [chase, localarr, stencil]
    assert _sampled_kernels(p, 0.01) == [chase]                # at least the hottest
    measured = replace(p, kernels=tuple(replace(k, throughput=Throughput((("l1", 50.0),))) if k.name == chase else k
                                        for k in p.kernels))
    note = _unmeasured_note(measured, 0.9)
    assert "2 kernel(s) with 9.8% of the samples" in note and "stencil" in note and "localarr" in note
    assert "chase" not in note
    every = replace(p, kernels=tuple(replace(k, throughput=Throughput((("l1", 50.0),))) for k in p.kernels))
    assert _unmeasured_note(every, 1.0) is None
    # and the counters run is told only the hottest kernel's name
    cfg = _replaying_harness(tmp_path, "", exit_code=0)
    throughput_pass(cfg, p, None, log=lambda m: None)
    assert json.loads((tmp_path / "env.json").read_text())["GPA_CUPTI_KERNELS"] == chase


def test_default_share_measures_every_sampled_kernel_of_every_kernels_case():
    """The counters run's kernel choice ([profile] throughput_share = 0.9) leaves the advice of every
    kernels/ case as it was: each case's sampled kernels are all measured, as before the share."""
    from gpa_lsp.profile.collect import _sampled_kernels
    cases = sorted((ROOT / "kernels").glob("*/recorded/cupti.gpabundle"))
    assert len(cases) >= 41
    for path in cases:
        p = read_bundle(path).profile
        sampled = {pc.function for pc in p.pcs if pc.total}
        assert set(_sampled_kernels(p, ProfileConfig().throughput_share)) == sampled, path.parent.parent.name
