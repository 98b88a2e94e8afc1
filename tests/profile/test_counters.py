"""Unit throughput from CUPTI's Range Profiler against Nsight Compute's, on recorded H100 output.

Real data: ``fixtures/counters.h100.json.gz`` holds the injection library's raw output
(``cupti.txt`` of the counters run) for every kernels/ case, recorded on the H100 (CUPTI
13.0.1) by benchmarks/profiling/counters_vs_ncu.py with the counters run's metrics as they are
(``counters.METRICS``: four unit shares, SM pipes left out, and the launch's amounts, DRAM bytes,
duration and clock; 14 passes), for four cases the ``ncu --metrics`` pass run in an earlier
session beside the five unit shares (``same_session_ncu``), and for two the counters run and the
ncu pass with the amounts in one session (``same_session_amounts``). The cases' bundles
(``kernels/*/recorded/cupti.gpabundle``) hold the unit throughput ncu measured when they were
recorded (the mean of their profiled launches, ``--clock-control none``).
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import _programs, advise_bundle, build_context
from gpa_lsp.analysis.coalescing import model as coalescing_model
from gpa_lsp.analysis.gathers import merge_estimate
from gpa_lsp.analysis.sources import make_reader
from gpa_lsp.config import Config, HarnessConfig, ProfileConfig, load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import attach_throughput, throughput_pass
from gpa_lsp.profile.cupti import counters
from gpa_lsp.profile.throughput import AMOUNTS, UNITS, Throughput, summarise

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("fixtures") / "counters.h100.json.gz"
# ncu flushes the caches before each replayed pass (--cache-control all, its default; the
# throughput pass keeps it), CUPTI's Range Profiler does not: on a launch of a few microseconds
# the DRAM and L2 shares then depend on what the replayed pass found in the L2, and they are not
# reproducible: bitonic_global's 8 us launch read DRAM 20.6% in the afternoon's recording and
# 42.1% in the evening's (SM pipes left out, so other passes), ncu 31.0%. They are not compared;
# test_short_launches_advice_does_not_lean_on_them checks that their advice does not depend on them.
SHORT_LAUNCH_NS = 20_000
# Cases recorded after the fixture whose counters run (benchmarks/profiling/counters_vs_ncu.py, a
# device call) is still to come: named, so the gap shows (their parametrized checks are skipped
# with this reason) and a case with a bundle but no row and no entry here still fails.
NO_COUNTERS_RUN_YET: dict[str, str] = {}


@pytest.fixture(scope="module")
def recorded():
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _bundle(case: str):
    return read_bundle(ROOT / "kernels" / case / "recorded" / "cupti.gpabundle")


def _with_cuptis(bundle, rows):
    """``bundle`` with CUPTI's figures (``rows`` of a counters run) in place of ncu's."""
    bare = replace(bundle.profile, kernels=tuple(replace(k, throughput=None) for k in bundle.profile.kernels))
    return replace(bundle, profile=attach_throughput(bare, rows, "none"))


def _context(bundle, kernel_name: str):
    """The advisor's KernelContext of one kernel of ``bundle``."""
    programs, _ = _programs(bundle)
    kernel = next(k for k in bundle.profile.kernels if k.name == kernel_name)
    pcs = [p for p in bundle.profile.pcs if p.cubin == kernel.cubin and p.function == kernel.name]
    return build_context(programs[kernel.cubin], kernel, pcs, bundle.profile.device, make_reader())


# Replay passes on GH100 (CUPTI 13.0.1, the library's count) by the metrics a run asked for: the 9
# of the first recording (throughput.METRICS then), the 5 unit shares (the same-session rows), the 4
# shares alone (the evening's first recording; SM pipes alone cost 8: benchmarks/profiling/README.md)
# and the 8 the counters run measures now (the 4 shares and the 4 amounts).
PASSES_BY_METRICS = {9: 22, 5: 18, 4: 10, 8: 14}


def test_every_case_has_its_sampled_kernels_measured_and_the_run_ended_early(recorded):
    cases = recorded["cases"]
    bundles = {p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/cupti.gpabundle")}
    assert set(cases) == bundles - set(NO_COUNTERS_RUN_YET)
    assert set(NO_COUNTERS_RUN_YET) <= bundles      # (and once its row is in the fixture, the entry leaves)
    for case, row in cases.items():
        run = counters.parse(row["counters_txt"])
        assert not run.errors, (case, run.errors)
        assert run.exited_early and run.complete, case    # F record, then END: the harness was cut short
        sampled = {pc.function for pc in _bundle(case).profile.pcs if pc.total}
        assert {k for k, _ in run.rows} == sampled, case
        assert run.passes == PASSES_BY_METRICS[len(run.rows[0][1])] == 14, case
        for _, vals in run.rows:
            assert set(vals) == set(counters.METRICS), case
            assert all(0.0 <= vals[m] <= 100.0 for m in counters.SHARES), case
            assert all(vals[m] >= 0.0 for m in AMOUNTS) and summarise([vals]).duration_ns > 1000, case
            # the SM clock, unlocked: H100 and H200 at most 1.98 GHz; cycles over the record's duration read
            # up to ~1% over it (index_select_rows, H200: 2.002 GHz)
            assert 1.8e9 < summarise([vals]).clock_hz < 2.02e9, case


def test_sm_pipes_bound_nothing_from_the_counters_run(recorded):
    """Why the counters run leaves SM pipes out: no optimizer's bound keeps it, and its one reader,
    the coalescing model, needs each access's sector counts, which only ncu's source counters bring:
    with CUPTI's figures (duration and clock included) it runs on no case's CUPTI bundle."""
    from gpa_lsp.analysis.optimizers import REGISTRY
    assert set(counters.COUNTER_UNITS) == set(UNITS) - {"sm"}
    assert all(set(o.keeps) <= {"dram", "l2", "l1"} for o in REGISTRY)
    for case, row in recorded["cases"].items():
        b = _with_cuptis(_bundle(case), counters.parse(row["counters_txt"]).rows)
        for k in b.profile.kernels:
            if k.throughput is None:
                continue
            assert k.throughput.pct("sm") is None and k.throughput.duration_ns and k.throughput.clock_hz, case
            assert not any(p.sectors for p in b.profile.pcs), case
            assert coalescing_model(_context(b, k.name)) is None, case


# (case, unit) -> why the counters run and ncu's recorded figure differ by 5 points or more (issue 17's
# target is 5 points; these are where it is not met, each measured, none widened away)
OVER_5_POINTS = {
    ("cosine_rows", "l1"): "95.7% in the counters run against 90.3% in ncu's pass (recorded 2026-11-28 "
                           "on the H200, two processes): a thread-per-row walk holding the L1 near its peak",
}


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
                if (case, unit) in OVER_5_POINTS:
                    assert 5.0 <= abs(d) < 6.0, (case, unit, mine.pct(unit), pct)   # as measured, no worse
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


def test_same_session_amounts_agree_with_ncus(recorded):
    """The launch's amounts, the counters run against the ncu pass in one session: DRAM bytes and
    duration within 3% (CUPTI's first launch, ncu's mean of three with its cache flush), the clock
    within 1%."""
    same = recorded["same_session_amounts"]
    assert set(same) == {"particle_gather", "saxpy_stream"}
    for case, row in same.items():
        assert row["ncu_note"] is None and row["note"] is None
        for name, vals in counters.parse(row["counters_txt"]).rows:
            mine, theirs = summarise([vals]), Throughput.from_json(row["ncu"][name])
            assert mine.dram_bytes == pytest.approx(theirs.dram_bytes, rel=0.03), case
            assert mine.duration_ns == pytest.approx(theirs.duration_ns, rel=0.03), case
            assert mine.clock_hz == pytest.approx(theirs.clock_hz, rel=0.01), case
            assert mine.dram_bytes != theirs.dram_bytes


def test_dram_bytes_agree_with_ncus_where_dram_holds_the_time(recorded):
    """Where DRAM runs at 30% of its peak or more (the gathers' merge is priced only where it runs at
    the probe's gathers' share, 60% or more: analysis/gathers.py), CUPTI's DRAM bytes are within 6% of
    the recorded ncu bundle's (worst: permute_divmod, +5.3%); and the replayed launch's duration is
    the activity records' (the sampling run's own timing of that launch) within 5% but for
    dot_runtime_unroll, whose launches' durations vary by 20% from run to run, and heat2d_naive
    (H200): a 512 MB load-and-store stream whose activity records say 264-267 us under the sampling
    run and 265 us under record.py, where its event pairs say 255 us, ncu 246 us and the counters
    run 250 us (6.4% under the first record); and two kernels near the issue's peak (H200):
    rgb_planar, 515 us by the sampling run's first record and 512 us by record.py's, 494 us by event
    pairs, 489 us by the counters run and ncu (5.1% under); bilinear_resize, 196 us by the first
    record, 191 us by record.py's, 188 us by event pairs, 186 us by the counters run and ncu (5.1%
    under); lut_equalize (H200), a byte-in float-out stream: 266 us by the sampling run's first
    record and 265 us by record.py's, 243 us by event pairs, 240 us by the counters run (10%
    under); life_bytes (H200), a byte stencil: 785 us by the first record and 783 us by record.py's,
    733 us by event pairs, 727 us by the counters run (7.4% under); channel_affine_nchw (H200), a
    4-byte stream: 378 us by the first record, 374 us by record.py's, 341 us by event pairs, 337 us
    by the counters run (10.8% under); bias_gelu_half and quantize_rows_int8 (H200, a half and a
    float stream): 260 and 237 us by the sampling run's first record, 259 and 236 us by record.py's,
    238 and 220 us by event pairs, 233 and 217 us by the counters run (10.5% and 8.7% under); the
    calibration streams scale_rows_half and threshold_u8 (H200): 226 and 409 us by record.py's
    durations, 207 and 370 us by event pairs (scale_rows_half's counters run 203 us, 10.1% under the
    sampling run's first record); pcm_deinterleave (H200, interleaved 16-bit samples to planar
    float): 241 us by the first record, 238 us by record.py's, 221 us by event pairs, 220 us by the
    counters run (8.7% under). Why these records run long is not known."""
    long_records = {"dot_runtime_unroll", "heat2d_naive", "rgb_planar", "bilinear_resize", "lut_equalize", "life_bytes",
                    "channel_affine_nchw", "bias_gelu_half", "quantize_rows_int8", "scale_rows_half", "threshold_u8",
                    "pcm_deinterleave"}
    busy = 0
    for case, row in recorded["cases"].items():
        kernels = {k.name: k for k in _bundle(case).profile.kernels}
        for name, vals in counters.parse(row["counters_txt"]).rows:
            mine, theirs = summarise([vals]), kernels[name].throughput
            if mine.pct("dram") >= 30.0 and theirs.dram_bytes:
                busy += 1
                assert mine.dram_bytes == pytest.approx(theirs.dram_bytes, rel=0.06), case
            launch = kernels[name].launches[0].duration_ns
            if case not in long_records and launch >= SHORT_LAUNCH_NS:
                assert mine.duration_ns == pytest.approx(launch, rel=0.05), case
    assert busy >= 8


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


# the cases whose advice the memory-system bound touches (the only advice unit shares can change);
# kmeans_assign's was Loop Unrolling's, silent since nvcc's own unroll is seen (benchmarks/unroll)
BOUNDED = ("gaussian_blocks", "icp_local_array", "lavamd_unroll", "layernorm_rows",
           "permute_divmod", "saxpy_stream")
CASES = [pytest.param(c, marks=pytest.mark.skip(reason=NO_COUNTERS_RUN_YET[c])) if c in NO_COUNTERS_RUN_YET else c
         for c in sorted(p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/cupti.gpabundle"))]


def _advice(bundle, case):
    return [k.advice for k in advise_bundle(bundle, config=load(ROOT / "kernels" / case)).kernels]


@pytest.mark.parametrize("case", CASES)
def test_same_advice_with_cuptis_figures(recorded, case):
    """Every case: the same optimizers, ranks and lines with CUPTI's figures as with ncu's, and the
    estimates within 5%; the launch's amounts change no estimate but particle_gather's. One exception, named with its mechanism: dot_runtime_unroll's Block Increase
    is bounded by its L1 (100 / share), and the share is the same L1 work over a launch that runs
    longer or shorter from one measurement to the next (ncu's replay 657 us, CUPTI's 603 us, the
    activity records 545 us): the L1's busy time, share x duration, is the same within 4%."""
    b = _bundle(case)
    rows = counters.parse(recorded["cases"][case]["counters_txt"]).rows
    mine = _with_cuptis(b, rows)
    before, after = _advice(b, case), _advice(mine, case)
    # the launch's amounts change the advice only where a model prices by them (particle_gather's
    # merged gathers, test_particle_gathers_merge_is_priced_by_cuptis_dram_bytes)
    shares_only = _advice(_with_cuptis(b, [(n, {m: v for m, v in vals.items() if m in counters.SHARES})
                                           for n, vals in rows]), case)
    if case != "particle_gather":
        assert [[(a.optimizer, a.estimated_speedup) for a in k] for k in shares_only] == \
               [[(a.optimizer, a.estimated_speedup) for a in k] for k in after]
    bounded = 0
    for kb, ka in zip(before, after, strict=True):
        assert [(a.optimizer, a.location and a.location.line) for a in kb] == \
               [(a.optimizer, a.location and a.location.line) for a in ka]
        for x, y in zip(kb, ka):
            bounded += bool(x.bounded_by or y.bounded_by)
            if abs(y.estimated_speedup / x.estimated_speedup - 1) < 0.05:
                continue
            assert case == "dot_runtime_unroll" and x.bounded_by == y.bounded_by == "l1", \
                (x.optimizer, x.estimated_speedup, y.estimated_speedup)
            tb, ta = (next(k.throughput for k in p.profile.kernels if k.throughput) for p in (b, mine))
            assert x.estimated_speedup == pytest.approx(100 / tb.pct("l1"), rel=1e-3)
            assert y.estimated_speedup == pytest.approx(100 / ta.pct("l1"), rel=1e-3)
            assert ta.pct("l1") * ta.duration_ns == pytest.approx(tb.pct("l1") * tb.duration_ns, rel=0.05)
    if case in BOUNDED:
        assert bounded, "no advice of this case is bounded by a unit: it tests nothing here"


def test_particle_gathers_merge_is_priced_by_cuptis_dram_bytes(recorded):
    """particle_gather (validation; the field as one float4 measured 1.87x on the H100): with CUPTI's
    figures Memory Transaction Reduction is priced by the DRAM bytes its merged gathers save
    (``gathers.merge_estimate``), within 3% of the estimate with ncu's figures (1.86x); without the
    launch's DRAM bytes (the counters run before they were measured) it fell back to 1.37x."""
    case, mtr = "particle_gather", "memory_transaction_reduction"
    b = _bundle(case)
    rows = counters.parse(recorded["cases"][case]["counters_txt"]).rows
    mine = _with_cuptis(b, rows)
    shares_only = _with_cuptis(b, [(n, {m: v for m, v in vals.items() if m in counters.SHARES}) for n, vals in rows])
    (name,) = {n for n, _ in rows}
    est, lines = {}, set()
    for label, bundle in (("ncu", b), ("cupti", mine), ("shares only", shares_only)):
        (top, *_), = _advice(bundle, case)
        assert top.optimizer == mtr, label
        est[label] = top.estimated_speedup
        lines.add(top.location.line)
    assert len(lines) == 1
    merged, saved = merge_estimate(_context(mine, name))
    assert saved == 2 and est["cupti"] == pytest.approx(merged, rel=1e-4)     # the advice rounds to 4 places
    assert est["ncu"] == pytest.approx(merge_estimate(_context(b, name))[0], rel=1e-4)
    assert est["cupti"] == pytest.approx(est["ncu"], rel=0.03) and 1.8 < est["ncu"] < 1.9
    assert merge_estimate(_context(shares_only, name)) is None and est["shares only"] < 0.8 * est["ncu"]


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
