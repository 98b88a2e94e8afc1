"""Fixes as a domain module: the advisor's Fix -> a FixPlan of source edits, checked with the real nvcc.

The float-literal fix on kernels/hotspot_double must make the whole statement
float (both ``2.0`` literals) and compile to the improved variant's SASS; the
restrict fix on kernels/restrict_fir must qualify every read-only pointer it
names and leave the written one alone; every kind refuses text that is not
what it expects.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpa_lsp import config as gpa_config
from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.model import Fix
from gpa_lsp.cuda_source import parse
from gpa_lsp.fixes import FixPlan, SourceEdit, apply_plan, plan_fix
from gpa_lsp.sass import load_program
from gpa_lsp.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"


def _case(name: str) -> Path:
    d = KERNELS / name
    if not (d / "original.cu").exists():
        pytest.skip(f"kernels/{name} is not in this checkout")
    return d


def _advised_fix(case: str, optimizer: str, collector: str = "cupti") -> Fix:
    d = _case(case)
    bundle = d / "recorded" / f"{collector}.gpabundle"
    if not bundle.exists():
        pytest.skip(f"kernels/{case} has no recorded bundle")
    report = advise_bundle(str(bundle), config=gpa_config.load(str(d)))
    fix = next((a.fix for k in report.kernels for a in k.advice if a.optimizer == optimizer and a.fix), None)
    assert fix is not None, f"{case}: no {optimizer} fix in the advice"
    return fix


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return None


def _scratch(tmp_path: Path, case: str, texts: dict[str, str]) -> Path:
    """kernels/common and the given files (name -> text) under tmp/<case>, so relative includes resolve."""
    if not (tmp_path / "common").exists():
        shutil.copytree(KERNELS / "common", tmp_path / "common")
    d = tmp_path / case
    d.mkdir(exist_ok=True)
    for name, text in texts.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def _cubin(src: Path) -> Path:
    out = src.with_suffix(".cubin")
    proc = subprocess.run([find_tool("nvcc"), "-cubin", "-O3", "-arch=sm_90", "-lineinfo", "-o", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


def _function(cubin: Path, name: str):
    prog = load_program(cubin)
    fn = next((f for f in prog.functions if name in f.name), None)
    assert fn is not None, [f.name for f in prog.functions]
    return fn


# ---- the advisor's fixes on real kernels --------------------------------------------------------

@pytest.mark.slow
def test_float_literal_fix_makes_the_statement_float_like_improved(tmp_path):
    fix = _advised_fix("hotspot_double", "strength_reduction")
    assert fix.kind == "float_literal"
    plan = plan_fix(fix, _read)
    assert isinstance(plan, FixPlan) and plan.nvcc_flags == ()
    original = _read(fix.file)
    fixed = apply_plan(plan, {fix.file: original})[fix.file]
    improved = (KERNELS / "hotspot_double" / "improved.cu").read_text()
    # both literals of the statement (lines 32 and 33), not only the one on the flagged line
    assert len(plan.edits) == 2 and {e.start[0] for e in plan.edits} == {31, 32}
    code = lambda t: [l for l in t.splitlines() if not l.startswith("//")]   # noqa: E731  (the header comments differ)
    assert code(fixed) == code(improved)
    assert _read(fix.file) == original                     # planning and applying never touch the file
    d = _scratch(tmp_path, "hotspot_double", {"fixed.cu": fixed, "improved.cu": improved})
    got, want = _function(_cubin(d / "fixed.cu"), "calculate_temp"), _function(_cubin(d / "improved.cu"), "calculate_temp")
    assert not [i for i in got.instructions if i.base_opcode == "F2F"]
    assert [i.opcode for i in got.instructions] == [i.opcode for i in want.instructions]


@pytest.mark.slow
def test_restrict_fix_qualifies_every_read_only_pointer(tmp_path):
    fix = _advised_fix("restrict_fir", "restrict_pointer")
    assert fix.kind == "restrict"
    assert fix.params["parameters"] == ["in", "coef"] and fix.params["parameter"] == "in"
    plan = plan_fix(fix, _read)
    assert plan is not None and "'in', 'coef'" in plan.title
    fixed = apply_plan(plan, {fix.file: _read(fix.file)})[fix.file]
    header = next(l for l in fixed.splitlines() if "void fir_bank(" in l)
    assert header == "__global__ void fir_bank(float* out, const float* __restrict__ in, const float* __restrict__ coef, int n) {"
    d = _scratch(tmp_path, "restrict_fir", {"fixed.cu": fixed})
    _cubin(d / "fixed.cu")
    # the JSON form and the single "parameter" of older reports plan the same way
    as_json = {"kind": "restrict", "file": fix.file, "line": fix.line,
               "params": {"function": "_Z8fir_bankPfS_S_i", "parameter": "coef"}}
    one = plan_fix(as_json, _read)
    assert [e.text for e in one.edits] == ["const float* __restrict__ coef"]


def test_restrict_fix_follows_a_row_view_of_the_parameter():
    # softmax_rows reads x[i] where `const float* x = in + size_t(r) * cols`: the hot loads go through
    # `in`, so the fix (and `gpa verify`) qualifies `in`; `out` is written through its view y
    fix = _advised_fix("softmax_rows", "restrict_pointer", "ncu")
    assert fix.params["parameters"] == ["in"]
    plan = plan_fix(fix, _read)
    fixed = apply_plan(plan, {fix.file: _read(fix.file)})[fix.file]
    assert "__global__ void softmax_rows(float* out, const float* __restrict__ in, int rows, int cols) {" in fixed


# ---- each kind on small sources ----------------------------------------------------------------

def _plan(text: str, kind: str, line: int | None = None, **params) -> FixPlan | None:
    return plan_fix(Fix(kind, "k.cu", line, params), lambda p: text if p == "k.cu" else None)


def _apply(text: str, plan: FixPlan) -> str:
    return apply_plan(plan, {"k.cu": text})["k.cu"]


LOOPY = """__global__ void k(float* out, const float* in, int n) {
  float s = 0.f;
  for (int i = 0; i < n; ++i) {
    s += in[i] * 0.5;
    s -= 1e-3 * s;
  }
  out[0] = s * 2.0;
}
"""


def test_float_literal_on_a_loop_header_makes_the_loop_body_float():
    text = LOOPY.replace("for (int i = 0; i < n; ++i)", "for (int i = 0; i < n * 1.5; ++i)")
    out = _apply(text, _plan(text, "float_literal", 3))
    assert "n * 1.5f;" in out and "in[i] * 0.5f;" in out and "1e-3f * s;" in out
    assert "s * 2.0;" in out                                  # outside the loop: untouched


def test_float_literal_refusals():
    text = "__device__ float f(float a) {\n  return a * 2.0f + 1.5;\n}\n"
    col = text.splitlines()[1].index("2.0f")
    assert _plan(text, "float_literal", 2, columns=[[col, col + 3]]) is None        # already suffixed
    assert _plan(text, "float_literal", 2, columns=[[col, col + 4]]) is None        # a float, not a double
    assert _plan(text, "float_literal", 1) is None                                   # no double literal there
    broken = "__device__ float f(float a) {\n  return a * 2.0 +;\n}\n"
    assert _plan(broken, "float_literal", 2) is None                                 # a syntax error around it
    plan = _plan(text, "float_literal", 2)                                           # no columns: the line's
    assert _apply(text, plan).splitlines()[1] == "  return a * 2.0f + 1.5f;"


def test_unroll_puts_or_replaces_the_pragma_on_the_loop():
    out = _apply(LOOPY, _plan(LOOPY, "unroll", 3, factor=4))
    assert out.splitlines()[2:4] == ["  #pragma unroll 4", "  for (int i = 0; i < n; ++i) {"]
    again = _apply(out, _plan(out, "unroll", 4, factor=2))
    assert again.splitlines()[2] == "  #pragma unroll 2"
    assert _plan(out, "unroll", 4, factor=4) is None                                # already what is asked
    assert _plan(LOOPY, "unroll", 2, factor=4) is None                              # not a loop
    # a comment between the pragma and the loop still makes it the loop's pragma
    commented = LOOPY.replace("  for (", "#pragma unroll 8\n  // the hot loop\n  for (")
    out = _apply(commented, _plan(commented, "unroll", 5, factor=2))
    assert out.splitlines()[2:5] == ["  #pragma unroll 2", "  // the hot loop", "  for (int i = 0; i < n; ++i) {"]


def test_restrict_refusals_and_prototypes():
    text = ("__global__ void k(float* out, float* in, int n);\n"
            "__global__ void k(float* out, float* in, int n) {\n"
            "  out[0] = in[0] + in[n];\n"
            "}\n")
    assert _plan(text, "restrict", 2, function="k", parameters=["out"]) is None       # written through
    assert _plan(text, "restrict", 2, function="other", parameters=["in"]) is None    # no such function
    assert _plan(text, "restrict", 2, function="k", parameters=["n"]) is None         # not a pointer
    plan = _plan(text, "restrict", 2, function="k", parameters=["out", "in"])         # out is skipped
    out = _apply(text, plan)
    assert out.splitlines()[:2] == ["__global__ void k(float* out, const float* __restrict__ in, int n);",
                                    "__global__ void k(float* out, const float* __restrict__ in, int n) {"]
    assert plan.title == "GPA: make 'in' const __restrict__"
    handed_on = text.replace("out[0] = in[0] + in[n];", "out[0] = in[0]; atomicAdd(in, 1.f);")
    assert _plan(handed_on, "restrict", 2, function="k", parameters=["in"]) is None
    # a cast is followed: a store through the cast pointer writes, a read through a const one does not
    cast_store = text.replace("out[0] = in[0] + in[n];", "reinterpret_cast<float2*>(in)[0] = make_float2(0.f, 1.f);")
    assert _plan(cast_store, "restrict", 2, function="k", parameters=["in"]) is None
    cast_read = text.replace("out[0] = in[0] + in[n];", "out[0] = reinterpret_cast<const float2*>(in + 2)[n].x;")
    assert _plan(cast_read, "restrict", 2, function="k", parameters=["in"]) is not None
    done = "__global__ void k(float* out, const float* __restrict__ in) { out[0] = in[0]; }\n"
    assert _plan(done, "restrict", 1, function="k", parameters=["in"]) is None        # already const __restrict__


def test_block_size_refuses_an_expression_launch():
    text = ("__global__ void k(float* o) { o[0] = 1.f; }\n"
            "void run(float* o, int b) {\n"
            "  k<<<4, b * 2>>>(o);\n"
            "  k<<<4, 64>>>(o);\n"
            "}\n")
    assert _plan(text, "block_size", 3, size=128, current=64) is None                 # an expression
    out = _apply(text, _plan(text, "block_size", 4, size=128, current=64))
    assert "k<<<4, 128>>>(o);" in out
    assert _plan(text, "block_size", 4, size=128, current=32) is None                 # not what the fix saw


def test_inline_and_fast_math():
    text = "__device__ __noinline__ float f(float x) { return x; }\n"
    assert _apply(text, _plan(text, "inline", 1, function="_Z1ff")).startswith("__device__ __forceinline__ float f")
    assert _plan(text, "noinline", 1, function="f") is None
    plan = plan_fix({"kind": "fast_math", "file": None, "line": None, "params": {"flag": "--use_fast_math"}}, _read)
    assert plan.nvcc_flags == ("--use_fast_math",) and plan.edits == ()


def test_non_ascii_text_before_the_edit_keeps_columns_right():
    text = ("// température: les valeurs en °C — ünïcödé\n"
            "__device__ float f(float a) {\n"
            "  /* é */ return a * 0.75 + 0.25;  // ½\n"
            "}\n")
    plan = _plan(text, "float_literal", 3)
    line = text.splitlines()[2]
    assert [e.start for e in plan.edits] == [(2, line.index("0.75") + 4), (2, line.index("0.25") + 4)]
    assert _apply(text, plan).splitlines()[2] == "  /* é */ return a * 0.75f + 0.25f;  // ½"
    src = parse(text)
    assert [l.text for l in src.literals_on_line(2)] == ["0.75", "0.25"]


def test_apply_plan_is_pure_and_refuses_overlaps():
    texts = {"a.cu": "x = 1.0;\n", "b.cu": "y;\n"}
    plan = FixPlan("t", (SourceEdit("a.cu", (0, 7), (0, 7), "f"),))
    assert apply_plan(plan, texts) == {"a.cu": "x = 1.0f;\n", "b.cu": "y;\n"}
    assert texts["a.cu"] == "x = 1.0;\n"
    with pytest.raises(ValueError):
        apply_plan(FixPlan("t", (SourceEdit("a.cu", (0, 0), (0, 3), "a"), SourceEdit("a.cu", (0, 2), (0, 4), "b"))),
                   texts)


def test_the_sentence_quotes_the_literals_the_plan_suffixes():
    """One test of "a double literal" (cuda_source): the sentence quotes exactly the literals the
    planner suffixes, hexadecimal and digit-separated ones too."""
    from gpa_lsp.fixes import PlainEdit, describe
    text = "__device__ double f(double a) {\n  return a * 0x1p3 + 1'000.5 - 2.;\n}\n"
    plan = _plan(text, "float_literal", 2)
    assert _apply(text, plan).splitlines()[1] == "  return a * 0x1p3f + 1'000.5f - 2.f;"
    lines = text.splitlines()
    edits = [PlainEdit("k.cu", e.start[0] + 1, e.start[1], e.end[0] + 1, e.end[1], e.text) for e in plan.edits]
    got = describe(Fix("float_literal", "k.cu", 2, {}), lambda path, n: lines[n - 1], lambda: edits)
    assert got == "change `0x1p3` to `0x1p3f` at k.cu:2:14, `1'000.5` to `1'000.5f` at 2:22 and `2.` to `2.f` at 2:32"
