"""Unit throughput (ncu Speed of Light) per kernel: parsing ncu's raw page, the bound, bundles.

Real data: ``fixtures/lavamd.ncu-raw.csv.gz`` is the raw page the ncu collector exported on an
H100 for kernels/lavamd_unroll (GPA_KEEP_NCU_EXPORT), and the case bundles in kernels/ were
recorded by both collectors with the throughput pass. Only ``test_bound_arithmetic`` uses
hand-written shares (arithmetic of the bound).
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pytest

from gpa_lsp.config import Config, ProfileConfig
from gpa_lsp.profile import throughput
from gpa_lsp.profile.bundle import profile_from_json, profile_to_json, read_bundle
from gpa_lsp.profile.collect import attach_throughput, throughput_pass

FIXTURES = Path(__file__).with_name("fixtures")
ROOT = Path(__file__).resolve().parents[2]
LAVAMD = "_Z15kernel_gpu_cudaPK6float4PKfPKiPS_iif"


@pytest.fixture(scope="module")
def raw_rows():
    return throughput.parse_raw_csv(gzip.decompress((FIXTURES / "lavamd.ncu-raw.csv.gz").read_bytes()).decode())


def test_raw_page_gives_every_unit_of_the_profiled_launch(raw_rows):
    assert [name for name, _ in raw_rows] == [LAVAMD]
    vals = raw_rows[0][1]
    for metric in throughput.UNITS.values():
        assert 0.0 < vals[metric] <= 100.0, metric
    # units normalised: nanoseconds, bytes, hertz (ncu prints us, Mbyte, Ghz)
    assert 100_000 < vals[throughput.DURATION] < 400_000          # ~185 us on the H100
    assert 1.0e9 < vals[throughput.CLOCK] < 2.1e9
    assert 2.0e8 < sum(vals[m] for m in throughput.DRAM_BYTES) < 4.0e8   # the 268 MB neighbour list + positions


def test_summary_names_the_busiest_unit(raw_rows):
    t = throughput.summarise([v for _, v in raw_rows])
    unit, pct = t.busiest(throughput.MEMORY_UNITS)
    # random float4 gathers: the L1 is the busiest memory unit, well ahead of L2 and DRAM
    assert unit == "l1"
    assert pct > t.pct("l2") + 10 and pct > t.pct("dram") + 10
    assert throughput.describe(t.units).startswith("L1/shared ")


def test_bound_arithmetic():
    """Arithmetic only (hand-written shares): 100 / the busiest kept unit's share."""
    t = throughput.Throughput(units=(("dram", 40.0), ("l1", 64.0), ("l2", 50.0), ("issue", 80.0)))
    assert throughput.bound(t, ("dram", "l2", "l1")) == (pytest.approx(100 / 64), "l1")
    assert throughput.bound(t, ("dram",)) == (pytest.approx(2.5), "dram")
    assert throughput.bound(t, ()) == (math.inf, None)
    assert throughput.bound(None, ("dram",)) == (math.inf, None)
    # a unit at (or reported above) its peak leaves no room: the bound is 1, never below
    assert throughput.bound(throughput.Throughput(units=(("l2", 101.0),)), ("l2",)) == (1.0, "l2")


def test_cupti_bundles_carry_throughput_and_it_round_trips():
    b = read_bundle(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle")
    k = b.profile.kernels[0]
    assert k.throughput is not None and k.throughput.clocks == "none"
    assert b.manifest["throughput"]["measured"] is True
    again = profile_from_json(profile_to_json(b.profile))
    assert again.kernels[0].throughput == k.throughput


def test_both_collectors_measure_the_same_units():
    """The CUPTI collector's extra pass and the ncu collector's own run saw the same kernel: same
    busiest unit, shares within a few points (different launches of the same harness)."""
    got = {}
    for c in ("cupti", "ncu"):
        got[c] = read_bundle(ROOT / "kernels" / "lavamd_unroll" / "recorded" / f"{c}.gpabundle").profile.kernels[0].throughput
    assert got["cupti"].busiest(throughput.MEMORY_UNITS)[0] == got["ncu"].busiest(throughput.MEMORY_UNITS)[0]
    for unit, pct in got["ncu"].units:
        assert abs(got["cupti"].pct(unit) - pct) < 5.0, unit


def test_attach_matches_kernels_by_name(raw_rows):
    b = read_bundle(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle")
    bare = profile_from_json({**profile_to_json(b.profile),
                              "kernels": [{**kj, "throughput": None} for kj in profile_to_json(b.profile)["kernels"]]})
    assert bare.kernels[0].throughput is None
    got = attach_throughput(bare, raw_rows, "none")
    assert got.kernels[0].throughput.busiest(throughput.MEMORY_UNITS)[0] == "l1"
    # rows of a kernel the profile does not hold change nothing
    assert attach_throughput(bare, [("_Z5otherv", raw_rows[0][1])], "none").kernels[0].throughput is None


def test_without_ncu_the_pass_leaves_the_profile_and_says_why(tmp_path):
    b = read_bundle(ROOT / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle")
    config = Config(root=str(tmp_path), profile=ProfileConfig(ncu=str(tmp_path / "no-ncu-here")))
    profile, note = throughput_pass(config, b.profile, None, log=lambda m: None)
    assert profile is b.profile
    assert note and "unit throughput not measured" in note and "ncu" in note


def test_a_unit_left_out_is_named_as_not_measured():
    """CUPTI's counters run leaves SM pipes out (profile/cupti/counters.py): the editor's text says so."""
    from gpa_lsp.profile.cupti import counters
    cupti = throughput.Throughput(units=tuple((u, 10.0 * (i + 1)) for i, u in enumerate(counters.COUNTER_UNITS)))
    assert throughput.describe(cupti.units) == "issue 40%, L1/shared 30%, L2 20%, DRAM 10% (SM pipes not measured)"
    assert "not measured" not in throughput.describe(cupti.units + (("sm", 5.0),))
    assert throughput.describe(()) == ""
