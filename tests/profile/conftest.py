"""Fixtures recorded on an H100 (driver 580, CUDA 13.0) for benchmarks/profiling/probe (= shared/samples/probe.cu)
by scripts/gpu/validate_collectors.sh: bundles from both collectors, CUPTI's raw output, ncu's exports."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).with_name("fixtures")
KERNELS = {"_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"}


@pytest.fixture(scope="session")
def cupti_bundle():
    from gpa_lsp.profile.bundle import read_bundle
    return read_bundle(FIXTURES / "probe.cupti.gpabundle")


@pytest.fixture(scope="session")
def ncu_bundle():
    from gpa_lsp.profile.bundle import read_bundle
    return read_bundle(FIXTURES / "probe.ncu.gpabundle")
