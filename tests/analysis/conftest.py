"""Fixtures for the advisor's tests: real cubins (nvcc) and the real H100 probe profile."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_data import PROBE_CU, probe_profile  # noqa: E402


@pytest.fixture(scope="session")
def probe_program(build_cubin):
    from gpa_lsp.sass import load_program
    return load_program(build_cubin(PROBE_CU, flags=("-O3",)))


@pytest.fixture(scope="session")
def probe(probe_program):
    """(program, profile) for shared/samples/probe.cu and its real Nsight Compute samples."""
    return probe_program, probe_profile(probe_program)
