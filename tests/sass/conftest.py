from __future__ import annotations

import pytest

from gpa_lsp.sass import load_program

from .kernels import NESTED

ARCHS = ["sm_80", "sm_90"]


@pytest.fixture(scope="session", params=ARCHS)
def arch(request):
    return request.param


@pytest.fixture(scope="session")
def nested_cubin(build_cubin, arch):
    return build_cubin(NESTED, arch=arch, name="nested")


@pytest.fixture(scope="session")
def nested_program(nested_cubin):
    return load_program(nested_cubin)
