"""Kernel and function names in one place (profile/demangle.py): the pure name functions."""

from gpa_lsp.profile.demangle import bare_name, base_name, display_name, qualified_name, unqualified_name


def test_display_name_is_what_the_reports_show():
    assert display_name("calculate_temp(float const*, float*, int)") == "calculate_temp"
    assert display_name("void ns::k<int>(int)") == "ns::k<int>"
    long = "reduce<cub::DeviceReducePolicy<float, int, cub::Sum>::Policy600, float*, float*>(float*)"
    assert display_name(long) == "reduce<...>"
    assert display_name("_Z6kernelv") == "_Z6kernelv"          # not demangled: left as it is
    assert display_name("(anonymous namespace)::k(int)") == "(anonymous namespace)::k"


def test_the_other_names():
    assert base_name("stencil(const float *, int)") == "stencil"
    assert base_name("void ns::k(int)") == "ns::k"
    assert bare_name("_Z7stencilPKfPfi") == "stencil"
    assert bare_name("ns::f(int)") == "f"
    assert qualified_name("ns::k(int)") == "ns::k"
    assert unqualified_name("ns::k(int)") == "k"
