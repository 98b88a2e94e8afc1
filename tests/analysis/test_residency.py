"""L2 residency (analysis/residency.py): the probe's curve, its use on another device, and its use
in Global Memory Coalescing's unit model.

The curve is the residency probe's (benchmarks/residency, recorded on the H200 2026-11-28); the
bundles are the cases' recordings. The rule applies where the profile saw the kernel launched more
than once; the kernels/ cases' ncu bundles hold one launch, so the switch is tested by patching
``relaunched`` on a real bundle (what the model does with the evidence, not whether it is there)."""

from __future__ import annotations

import importlib.util
import json
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpa_lsp.analysis import coalescing
from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.residency import ramp_ns, resident_cost, resident_share
from gpa_lsp.profile.bundle import read_bundle

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20
H100 = SimpleNamespace(name="NVIDIA H100 80GB HBM3", sm=90, sm_count=132)
H200 = SimpleNamespace(name="NVIDIA H200", sm=90, sm_count=132)
OTHER_CHIP = SimpleNamespace(name="NVIDIA A100-SXM4-80GB", sm=80, sm_count=108)
ROWSTATS = ROOT / "kernels/rowstats_few_blocks/recorded/ncu.gpabundle"


def _table_module():
    spec = importlib.util.spec_from_file_location("residency_table", ROOT / "benchmarks/residency/table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_table_is_what_the_probe_recorded():
    """gpa_lsp/data/residency.json is benchmarks/residency/table.py on the recorded files."""
    name, entry = _table_module().device_rows(ROOT / "benchmarks/residency/recorded/h200")
    shipped = json.loads(resources.files("gpa_lsp").joinpath("data/residency.json").read_text())["devices"]
    assert name == H200.name and shipped[name] == entry
    assert entry["l2_bytes"] == 60 * MB
    # the two lines: the L2's resident reads are faster than DRAM's, both with a fixed cost of microseconds
    assert entry["l2_bytes_per_s"] > 1.5 * entry["dram_bytes_per_s"]
    assert 1000 < entry["ramp_ns"] < 5000 and 1000 < entry["dram_ramp_ns"] < 5000


def test_the_l2_keeps_what_fits_and_nothing_of_what_does_not():
    shares = [resident_share(H200, mb * MB) for mb in (4, 16, 36, 48, 52, 56, 64, 128, 512)]
    assert shares == sorted(shares, reverse=True)             # never rises with the footprint
    assert shares[0] == 1.0 and resident_share(H200, 36 * MB) > 0.9
    assert 0.3 < resident_share(H200, 52 * MB) < 0.8          # the edge of the 60 MB L2
    assert resident_share(H200, 64 * MB) < 0.05 and resident_share(H200, 512 * MB) == 0.0


def test_a_device_of_the_same_chip_scales_the_footprint_by_its_l2():
    """The H100 (50 MB of L2) keeps of 44 MB what the H200 (60 MB) keeps of 52.8 MB."""
    assert resident_share(H100, 44 * MB) == pytest.approx(resident_share(H200, 44 * MB * 60 / 50))
    assert resident_share(H100, 48 * MB) < resident_share(H200, 48 * MB)
    assert resident_share(OTHER_CHIP, 8 * MB) == 0.0 and ramp_ns(OTHER_CHIP) == 0.0
    assert resident_cost(OTHER_CHIP, None, 93.0) == 1.0


def test_a_kept_byte_costs_what_the_two_rates_say():
    entry = json.loads(resources.files("gpa_lsp").joinpath("data/residency.json").read_text())["devices"][H200.name]
    assert resident_cost(H200, None, 94.0) == pytest.approx(entry["dram_bytes_per_s"] / entry["l2_bytes_per_s"])
    assert 0.3 < resident_cost(H200, None, 94.0) < 0.7


def _coalescing(report):
    k = report.kernels[0]
    return next(a for a in k.advice if a.optimizer == "global_memory_coalescing")


def test_one_launch_is_priced_cold():
    """rowstats_few_blocks' ncu bundle holds one launch: no evidence of a second, the DRAM roof stands."""
    assert len(read_bundle(ROWSTATS).profile.kernels[0].launches) == 1
    a = _coalescing(advise_bundle(ROWSTATS))
    assert a.bounded_by == "dram" and 8.5 < a.estimated_speedup < 9.6


def test_a_relaunched_kernel_reads_what_fits_from_the_l2(monkeypatch):
    """The same bundle, the kernel taken as launched again: its 40 MB of coalesced reads are mostly
    kept by the H100's L2, so the bound is the resident reads plus the launch's fixed cost, above
    the cold DRAM roof and below the bare bytes at the L2's rate."""
    monkeypatch.setattr(coalescing, "relaunched", lambda ctx: True)
    a = _coalescing(advise_bundle(ROWSTATS))
    assert a.bounded_by == "resident"
    assert 12.0 < a.estimated_speedup < 20.0
    assert "what the L2 keeps between launches" in a.bound_text()
