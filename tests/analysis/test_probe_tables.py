"""Which probed device's tables apply to a profile's device (analysis/probe_tables.py), checked on
bundles recorded on an H200 (benchmarks/accuracy/devices/h200, the validation split re-recorded
there; its timings are in the same folder): a probed device with its own rows for every table, and,
renamed, a device of the same chip the tables do not name (it borrows the H100's)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.probe_tables import TABLES, atomics_name, coalescing_devices, coverage, mlp_devices, name_in
from gpa_lsp.config import load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.model import Device

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "benchmarks" / "accuracy" / "devices" / "h200"
H100 = "NVIDIA H100 80GB HBM3"
GH200 = "NVIDIA GH200 480GB"     # the H100's chip, probed by no one: the H200's recordings renamed


def _achieved(case: str, variant: str) -> float:
    """original / variant kernel duration, as timed on the H200 (record.py --durations)."""
    rows = {(r["case"], r["variant"]): r for r in json.loads((H200 / "timings.json").read_text())["results"]}
    return rows[(case, "original")]["duration_ms"] / rows[(case, variant)]["duration_ms"]


def test_the_recorded_h200_bundles_name_a_device_of_the_h100s_chip():
    """The H200 has its own rows for every probe a model reads (the walk probe with its divergence
    rows, the loop-free, lane-walk spread and gather probes, the memory-parallelism curves, the
    atomics probe; recorded 2026-11-28): nothing borrowed, no note. A probe it was not recorded for
    (``lanewalk``, rows of one length: read by no model) still comes from the H100, probe by probe."""
    dev = read_bundle(H200 / "softmax_rows.ncu.gpabundle").profile.device
    assert dev.name == "NVIDIA H200" and (dev.sm, dev.sm_count) == (90, 132)
    for probe in ("walk", "divergence", "loopfree", "lanewalk_spread", "fieldgather"):
        assert name_in(coalescing_devices(), dev, probe) == "NVIDIA H200"
    assert name_in(coalescing_devices(), dev, "lanewalk") == H100
    assert name_in(mlp_devices(), dev) == "NVIDIA H200" and atomics_name(dev) == "NVIDIA H200"
    assert coverage(dev) is None


def test_a_device_of_the_same_chip_without_tables_borrows_them_all():
    """A GH200 (the H100's chip: sm_90, 132 SMs; no rows of its own) takes every table from the H100,
    the first probed device of its chip, and the note names each."""
    dev = Device(GH200, 90, 132)
    for probe in ("walk", "divergence", "loopfree", "lanewalk_spread", "fieldgather"):
        assert name_in(coalescing_devices(), dev, probe) == H100
    assert name_in(mlp_devices(), dev) == H100 and atomics_name(dev) == H100
    note = coverage(dev)
    assert f"{GH200} has no probe of its own for" in note and H100 in note and "same chip" in note
    assert all(what in note for _, _, what, _ in TABLES)


def test_the_lookup_goes_probe_by_probe():
    """Lookup arithmetic on a made-up table (names only): a device with one probe of its own takes
    the others from a probed device of its chip, none from another chip."""
    rows = {H100: {"walk": [1], "loopfree": [1]}, "NVIDIA H200": {"walk": [1]}}
    h200, other = Device("NVIDIA H200", 90, 132), Device("NVIDIA A100-SXM4-80GB", 80, 108)
    assert name_in(rows, h200, "walk") == "NVIDIA H200" and name_in(rows, h200, "loopfree") == H100
    assert name_in(rows, other, "loopfree") == other.name     # no rows: the caller gets none


def test_a_device_of_another_chip_borrows_nothing():
    for dev in (Device("NVIDIA A100-SXM4-80GB", 80, 108), Device("NVIDIA H100 PCIe", 90, 114)):
        assert name_in(coalescing_devices(), dev) == dev.name
        note = coverage(dev)
        assert "has no probe tables of its chip" in note and "Global Memory Coalescing" in note
    assert coverage(Device(H100, 90, 132)) is None


def test_h200_advice_uses_its_own_tables():
    """softmax_rows on the H200: the coalescing unit model ranks the warp-per-row rewrite first at
    8-12x (measured 10.8x by kernel durations); without any table the matched-stall estimate said
    5.2x. Its tables are its own: the report has no note."""
    case = ROOT / "kernels" / "softmax_rows"
    report = advise_bundle(str(H200 / "softmax_rows.ncu.gpabundle"), config=load(case))
    k = next(k for k in report.kernels if "softmax" in k.name)
    top = k.advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 19
    assert 8.0 <= top.estimated_speedup <= 12.0
    assert _achieved("softmax_rows", "warp_per_row") == pytest.approx(10.8, abs=0.5)
    assert not any("has no probe" in p for p in report.problems)


def test_advice_on_a_device_that_borrows_says_so():
    """The same bundle as recorded on a GH200: the report says which probes it borrowed from the H100."""
    case = ROOT / "kernels" / "softmax_rows"
    b = read_bundle(H200 / "softmax_rows.ncu.gpabundle")
    b = replace(b, profile=replace(b.profile, device=replace(b.profile.device, name=GH200)))
    report = advise_bundle(b, config=load(case))
    note = " ".join(report.problems)
    assert f"{GH200} has no probe of its own for" in note and H100 in note and "same chip" in note
    assert "loop-free DRAM roof" in note and "memory-parallelism" in note and "unit model" in note


def test_h100_bundles_report_no_table_note():
    case = ROOT / "kernels" / "softmax_rows"
    report = advise_bundle(str(case / "recorded" / "ncu.gpabundle"), config=load(case))
    assert not any(f"{H100} has no probe" in p for p in report.problems)     # neither borrowed nor missing


def test_a_borrowed_dram_share_is_converted_by_the_two_peaks():
    """Little's law (probe_tables.borrowed_dram_scale): on every H200 bundle as recorded on a GH200 (the
    H200's renamed) a DRAM share from a borrowed probe (walk, loop-free, gather) is worth the H100's
    walk-probe peak over the kernel's own peak, 0.70 (3.35 against 4.81 TB/s); on the H200's own
    probes and every H100 kernel: 1.0; a kernel whose DRAM share is too small to tell its peak: 1.0."""
    from types import SimpleNamespace
    from gpa_lsp.analysis.coalescing import borrowed_share_scale
    from gpa_lsp.analysis.probe_tables import PEAK_FROM_PCT, dram_peak, probed_dram_peak
    seen = 0
    for path in sorted(H200.glob("*.gpabundle")):
        b = read_bundle(path)
        other = replace(b.profile.device, name=GH200)
        for k in b.profile.kernels:
            tp = k.throughput
            if tp is None:
                continue
            own, borrowing = SimpleNamespace(device=b.profile.device, kernel=k), SimpleNamespace(device=other, kernel=k)
            for probe in ("walk", "loopfree", "fieldgather"):
                assert borrowed_share_scale(own, probe) == 1.0
            if (tp.pct("dram") or 0.0) < PEAK_FROM_PCT:
                assert borrowed_share_scale(borrowing, "loopfree") == 1.0
                continue
            mine = dram_peak(tp.dram_bytes, tp.duration_ns, tp.pct("dram"))
            for probe in ("walk", "loopfree", "fieldgather"):
                scale = borrowed_share_scale(borrowing, probe)
                assert scale == pytest.approx(probed_dram_peak(H100) / mine)
                assert 0.68 < scale < 0.71
            seen += 1
    assert seen >= 15
    h100 = read_bundle(ROOT / "kernels" / "softmax_rows" / "recorded" / "ncu.gpabundle")
    for k in h100.profile.kernels:
        assert borrowed_share_scale(SimpleNamespace(device=h100.profile.device, kernel=k), "loopfree") == 1.0


def test_a_borrowed_memory_parallelism_curve_is_converted():
    """A device of the H100's chip with no rows of its own (an H200 recording renamed): it takes the
    H100's memory-parallelism curve, whose shares are converted by the two DRAM peaks (Little's
    law), as the loop-free and gather probes' are; on its own curves (the real H200) nothing is."""
    from types import SimpleNamespace
    from gpa_lsp.analysis.probe_tables import mlp_curve_scale, probed_dram_peak, dram_peak
    b = read_bundle(H200 / "layernorm_rows.cupti.gpabundle")
    k = max(b.profile.kernels, key=lambda k: len(k.launches))
    tp = k.throughput
    other = replace(b.profile.device, name=GH200)
    assert name_in(mlp_devices(), other) == H100
    scale = mlp_curve_scale(SimpleNamespace(device=other, kernel=k))
    assert scale == pytest.approx(probed_dram_peak(H100) / dram_peak(tp.dram_bytes, tp.duration_ns, tp.pct("dram")))
    assert 0.68 < scale < 0.71
    assert mlp_curve_scale(SimpleNamespace(device=b.profile.device, kernel=k)) == 1.0
