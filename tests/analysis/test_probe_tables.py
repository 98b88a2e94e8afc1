"""Which probed device's tables apply to a profile's device (analysis/probe_tables.py), checked on
bundles recorded on an H200, a device the tables do not name (benchmarks/accuracy/devices/h200,
the validation split re-recorded there; its timings are in the same folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.probe_tables import coalescing_devices, coverage, mlp_devices, name_in
from gpa_lsp.config import load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.model import Device

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "benchmarks" / "accuracy" / "devices" / "h200"
H100 = "NVIDIA H100 80GB HBM3"


def _achieved(case: str, variant: str) -> float:
    """original / variant kernel duration, as timed on the H200 (record.py --durations)."""
    rows = {(r["case"], r["variant"]): r for r in json.loads((H200 / "timings.json").read_text())["results"]}
    return rows[(case, "original")]["duration_ms"] / rows[(case, variant)]["duration_ms"]


def test_the_recorded_h200_bundles_name_a_device_of_the_h100s_chip():
    dev = read_bundle(H200 / "softmax_rows.ncu.gpabundle").profile.device
    assert dev.name == "NVIDIA H200" and (dev.sm, dev.sm_count) == (90, 132)
    assert dev.name not in coalescing_devices()         # no coalescing probe ran on it
    assert name_in(coalescing_devices(), dev) == H100   # the same chip's tables
    assert name_in(mlp_devices(), dev) == "NVIDIA H200"  # its own memory-parallelism curves


def test_a_device_of_another_chip_borrows_nothing():
    for dev in (Device("NVIDIA A100-SXM4-80GB", 80, 108), Device("NVIDIA H100 PCIe", 90, 114)):
        assert name_in(coalescing_devices(), dev) == dev.name
        note = coverage(dev)
        assert "has no probe tables of its chip" in note and "Global Memory Coalescing" in note
    assert coverage(Device(H100, 90, 132)) is None


def test_h200_advice_uses_the_h100_tables_and_says_so():
    """softmax_rows on the H200: the coalescing unit model (borrowed tables) ranks the warp-per-row
    rewrite first at 8-12x (measured 10.8x by kernel durations); without the tables the
    matched-stall estimate said 5.2x. The report says which tables it borrowed."""
    case = ROOT / "kernels" / "softmax_rows"
    report = advise_bundle(str(H200 / "softmax_rows.ncu.gpabundle"), config=load(case))
    k = next(k for k in report.kernels if "softmax" in k.name)
    top = k.advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 19
    assert 8.0 <= top.estimated_speedup <= 12.0
    assert _achieved("softmax_rows", "warp_per_row") == pytest.approx(10.8, abs=0.5)
    note = " ".join(report.problems)
    assert "NVIDIA H200 has not been probed" in note and H100 in note and "same chip" in note
    assert "memory-parallelism" not in note     # its own curves: nothing borrowed there


def test_h100_bundles_report_no_table_note():
    case = ROOT / "kernels" / "softmax_rows"
    report = advise_bundle(str(case / "recorded" / "ncu.gpabundle"), config=load(case))
    assert not any("probe tables" in p or "not been probed" in p for p in report.problems)
