"""Quick-fix edit builders on real sources (the kernels/ cases and the test workspace), checked with nvcc.

Pure functions: each returns edits only when the text is what the fix
expects, so every builder has a "refuses" case next to its "edits" case.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from gpa_lsp.server import actions
from gpa_lsp.profile.demangle import bare_name
from gpa_lsp.server.actions import apply_edits

from .conftest import WORKSPACE, nvcc_compiles

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
APP = (WORKSPACE / "app.cu").read_text()


def _line(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.splitlines()) if needle in l)


def _case_copy(tmp_path: Path, case: str) -> Path:
    """kernels/<case>/original.cu and kernels/common in tmp, so relative includes still resolve."""
    src = KERNELS / case / "original.cu"
    if not src.exists():
        pytest.skip(f"kernels/{case} is not in this checkout")
    (tmp_path / case).mkdir()
    shutil.copytree(KERNELS / "common", tmp_path / "common")
    dst = tmp_path / case / "original.cu"
    dst.write_text(src.read_text())
    return dst


def test_float_literals_by_columns_and_by_scan():
    lines = APP.splitlines()
    ln = _line(APP, "return a * 0.75 + b * 0.25;")
    text = lines[ln]
    cols = [[text.index("0.75"), text.index("0.75") + 4], [text.index("0.25"), text.index("0.25") + 4]]
    e = actions.float_literal_edits(lines, ln, cols)
    assert apply_edits(APP, e).splitlines()[ln].strip() == "return a * 0.75f + b * 0.25f;"
    assert actions.float_literal_edits(lines, ln, []) == e            # found by scanning the line
    # a column that is not a double literal: refused
    assert actions.float_literal_edits(lines, ln, [[text.index("a *"), text.index("a *") + 1]]) is None
    # already float: refused
    fixed = apply_edits(APP, e).splitlines()
    assert actions.float_literal_edits(fixed, ln, [[c[0], c[1]] for c in cols]) is None


def test_literal_in_comment_is_not_a_literal():
    lines = ["    x = y * 2.0f; // scale by 2.0"]
    assert actions.float_literal_edits(lines, 0, []) is None


def test_unroll_inserts_or_replaces_the_pragma():
    lines = APP.splitlines()
    ln = _line(APP, "for (int k = 0; k < iters; ++k)")
    e = actions.unroll_edits(lines, ln, 4)
    out = apply_edits(APP, e).splitlines()
    assert out[ln] == "    #pragma unroll 4" and out[ln + 1] == lines[ln]
    again = actions.unroll_edits(out, ln + 1, 2)                      # loop_no_unroll lowers it
    assert apply_edits("\n".join(out) + "\n", again).splitlines()[ln] == "    #pragma unroll 2"
    assert actions.unroll_edits(out, ln + 1, 4) is None               # already what is asked
    assert actions.unroll_edits(lines, _line(APP, "float acc = in[i];"), 4) is None   # not a loop


def test_restrict_on_a_multiline_signature():
    src = ["__global__ void fir(float *out,", "                    float *coef,", "                    int n)", "{", "}"]
    e = actions.restrict_edits(src, "_Z3firPfS_i", "coef", 0)
    assert apply_edits("\n".join(src) + "\n", e).splitlines()[1].strip() == "const float* __restrict__ coef,"
    done = ["__global__ void fir(float *out, const float *__restrict__ coef, int n) {}"]
    assert actions.restrict_edits(done, "fir", "coef", 0) is None
    assert actions.restrict_edits(src, "fir", "n", 0) is None        # not a pointer
    assert actions.restrict_edits(src, "other", "coef", 0) is None   # no such function


def test_inline_and_noinline():
    lines = APP.splitlines()
    e = actions.inline_edits(lines, "smooth", "inline", 10)
    assert "__device__ __forceinline__ float smooth" in apply_edits(APP, e)
    assert actions.inline_edits(lines, "smooth", "noinline", 10) is None     # already __noinline__
    plain = ["__device__ float f(float x) { return x; }"]
    assert apply_edits(plain[0] + "\n", actions.inline_edits(plain, "_Z1ff", "noinline", 0)).startswith(
        "__noinline__ __device__ float f")


def test_block_size_literal_launch(tmp_path):
    src = APP.splitlines()
    ln = _line(APP, "relax<<<")
    e = actions.block_size_edits(src, ln, 128, 32)
    out = apply_edits(APP, e)
    assert "relax<<<(n + 31) / 32, 128>>>(out, in, n, iters);" in out
    assert actions.block_size_edits(src, ln, 128, 64) is None         # the launch is not what the fix saw
    f = tmp_path / "app.cu"
    f.write_text(out)
    ok, err = nvcc_compiles(f, tmp_path)
    assert ok, err


def test_block_size_through_a_dim3_of_literals(tmp_path):
    f = _case_copy(tmp_path, "gaussian_blocks")
    text = f.read_text()
    ln = _line(text, "gaussian_filter_7x7<<<")
    e = actions.block_size_edits(text.splitlines(), ln, 128, 64)
    out = apply_edits(text, e)
    assert "static const dim3 kBlock(16, 8);" in out
    assert actions.block_size_edits(text.splitlines(), ln, 100, 64) is None         # 8*100/64 not an integer
    f.write_text(out)
    ok, err = nvcc_compiles(f, tmp_path)
    assert ok, err


@pytest.mark.parametrize("pyproject", [False, True])
def test_fast_math_goes_into_the_project_config(pyproject):
    pre = "tool.gpa." if pyproject else ""
    text = f'[{pre}build]\nsources = ["k.cu"]\nnvcc_flags = [\n  "-O3",\n  "-arch=sm_90",\n]\n\n[{pre}harness]\ncommand = ["b"]\n'
    e = actions.fast_math_edits(text, pyproject, "--use_fast_math", ("-O3",))
    out = tomllib.loads(apply_edits(text, e))
    table = out["tool"]["gpa"] if pyproject else out
    assert table["build"]["nvcc_flags"] == ["-O3", "-arch=sm_90", "--use_fast_math"]
    assert table["harness"]["command"] == ["b"]
    assert actions.fast_math_edits(apply_edits(text, e), pyproject, "--use_fast_math", ()) is None


def test_fast_math_without_flags_or_file():
    text = '[build]\nsources = ["k.cu"]\n'
    out = tomllib.loads(apply_edits(text, actions.fast_math_edits(text, False, "--use_fast_math", ("-O3", "-arch=sm_90"))))
    assert out["build"] == {"sources": ["k.cu"], "nvcc_flags": ["-O3", "-arch=sm_90", "--use_fast_math"]}
    text = '[harness]\ncommand = ["b"]'
    out = tomllib.loads(apply_edits(text, actions.fast_math_edits(text, False, "--use_fast_math", ("-O3",))))
    assert out == {"harness": {"command": ["b"]}, "build": {"nvcc_flags": ["-O3", "--use_fast_math"]}}
    out = tomllib.loads(apply_edits("", actions.fast_math_edits(None, False, "--use_fast_math", ("-O3",))))
    assert out == {"build": {"nvcc_flags": ["-O3", "--use_fast_math"]}}


def test_bare_name_of_mangled_and_demangled():
    assert bare_name("_Z5relaxPfS_ii") == "relax"
    assert bare_name("_ZN2ns6kernelEPf") == "kernel"
    assert bare_name("ns::kernel(float*)") == "kernel"
    assert bare_name("smooth") == "smooth"
