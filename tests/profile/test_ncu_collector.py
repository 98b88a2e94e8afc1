"""The ncu collector's converter on real exports recorded on the H100."""

import gzip
from pathlib import Path

import pytest

from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.ncu import convert, launch_filter, ncu_argv, parse_details_csv, parse_source_csv

FIXTURES = Path(__file__).with_name("fixtures")
SHARED_CSV = [Path(__file__).resolve().parents[3] / "shared" / "samples" / "probe.h100.ncu-source-sass.csv",
              Path("/work/shared/samples/probe.h100.ncu-source-sass.csv")]


def _cubins():
    b = read_bundle(FIXTURES / "probe-run2.cupti.gpabundle")
    return b.cubins


def _exports():
    return (gzip.open(FIXTURES / "probe.ncu-source.csv.gz", "rt").read(),
            gzip.open(FIXTURES / "probe.ncu-details.csv.gz", "rt").read())


def test_source_blocks():
    source, _ = _exports()
    blocks = parse_source_csv(source)
    assert [b.kernel for b in blocks] == ["_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"] * 3
    assert [len(b.rows) for b in blocks[:3]] == [80, 640, 216]      # = function size / 16
    assert blocks[0].rows[0]["Source"].strip().startswith("LDC R1, c[0x0][0x28]")


def test_details():
    _, details = _exports()
    d = parse_details_csv(details)
    assert len(d) == 9
    assert d[0].kernel == "_Z7stencilPKfPfii" and d[0].grid == (16384, 1, 1) and d[0].block == (256, 1, 1)
    assert d[0].metrics["Registers Per Thread"][1] == "18"


def test_convert_offsets_are_relative_and_sum_launches():
    source, details = _exports()
    profile, used, notes = convert(source, details, _cubins())
    assert notes == []
    assert {k.name for k in profile.kernels} == {"_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"}
    stencil = profile.pcs_of("_Z7stencilPKfPfii")
    assert [p.offset for p in stencil] == list(range(0, 80 * 16, 16))
    blocks = [b for b in parse_source_csv(source) if b.kernel == "_Z7stencilPKfPfii"]
    first_all = sum(int(b.rows[0]["Warp Stall Sampling (All Samples)"]) for b in blocks)
    first_ni = sum(int(b.rows[0]["Warp Stall Sampling (Not-issued Samples)"]) for b in blocks)
    assert stencil[0].total == first_all and stencil[0].latency == first_ni
    assert stencil[0].executed == sum(int(b.rows[0]["Instructions Executed"]) for b in blocks)
    k = profile.kernel("_Z7stencilPKfPfii")
    assert len(k.launches) == 3 and k.launches[0].registers == 18
    # localarr's dynamically indexed array: local loads; every global load has sector counts
    assert any(p.sectors for p in profile.pcs_of("_Z8localarrPKfPfii"))
    assert set(used) == set(_cubins())


def test_convert_demangled_export_from_shared_samples():
    path = next((p for p in SHARED_CSV if p.is_file()), None)
    if path is None:
        pytest.skip("shared/samples is not beside this checkout")
    profile, _, notes = convert(path.read_text(), "", _cubins())
    # the export names kernels "stencil(const float *, float *, int, int)": joined by base name and size
    assert notes == []
    assert {k.name for k in profile.kernels} == {"_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"}
    hot = max(profile.pcs_of("_Z5chasePKiPKfPfii"), key=lambda p: p.total)
    assert hot.offset == 0x1E0


def test_kernel_filter_and_argv():
    source, details = _exports()
    profile, used, _ = convert(source, details, _cubins(), kernels=["chase"])
    assert [k.name for k in profile.kernels] == ["_Z5chasePKiPKfPfii"]
    assert launch_filter(["chase", "a.b"], 2) == ["--kernel-name", "regex:chase|a\\.b", "--launch-count", "4"]
    argv = ncu_argv("ncu", "/tmp/r", launch_count=1)
    assert argv[argv.index("-o") + 1] == "/tmp/r" and "SourceCounters" in argv and "WarpStateStats" in argv


def test_recorded_ncu_bundle_is_this_conversion():
    source, details = _exports()
    b = read_bundle(FIXTURES / "probe.ncu.gpabundle")
    profile, _, _ = convert(source, details, _cubins(), device=b.profile.device)
    assert b.profile == profile
    assert len(b.profile.pcs) == 80 + 640 + 216
    assert all(p.executed is not None for p in b.profile.pcs)


def test_duration_units():
    from gpa_lsp.profile.ncu import LaunchDetails, _TIME, _metric
    d = LaunchDetails("0", "k", (1, 1, 1), (1, 1, 1), {"Duration": ("usecond", "12.50"), "Dynamic Shared Memory Per Block": ("Kbyte/block", "2")})
    assert _metric(d, "Duration", _TIME) == 12_500  # unit test of the unit arithmetic
    from gpa_lsp.profile.ncu import _BYTES
    assert _metric(d, "Dynamic Shared Memory Per Block", _BYTES) == 2000
