"""Source scanners used by fixes: double literals, launch sites, read-only pointer parameters."""

from __future__ import annotations

from gpa_lsp.analysis.sources import (body_range, derived_pointers, double_literals, find_function, is_written,
                                      launch_sites, make_reader, pointer_parameters)


def _cols(text):
    return [text[s:e] for s, e in double_literals(text)]


def test_double_literals_without_suffix():
    assert _cols("v = v + 0.5 * (a + b - 2.0 * v) + 1e-3 + .25 + 3.f + 4.0f + 7") == ["0.5", "2.0", "1e-3", ".25"]
    assert _cols('x = 1.5f; // 0.5 in a comment') == []
    assert _cols('printf("%f 2.0\\n", 0.1);') == ["0.1"]
    assert _cols("float y = x1.5;") == []          # not a literal
    assert _cols("a = 2.5L + 1.0e+10") == ["1.0e+10"]


def test_launch_sites_literal_and_dim3():
    lines = ["dim3 block(8, 8);", "kern<<<grid, block>>>(a, b);", "other<<<n / 16, 16>>>(x);",
             "kern<<<g, 256, 0, s>>>(a);"]
    sites = launch_sites("k.cu", lines, "kern")
    assert [(s.line, s.current, s.dims) for s in sites] == [(2, 64, (8, 8)), (4, 256, (256,))]
    o = launch_sites("k.cu", lines, "other")
    assert [(o[0].line, o[0].current, lines[2][o[0].columns[0]:o[0].columns[1]])] == [(3, 16, "16")]


def test_read_only_pointer_parameter_detection():
    src = """__global__ void fir(const float* in, float* out,
                    const float* taps, int n) {
  int i = threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < 8; ++k) acc += in[i + k] * taps[k];
  out[i] = acc;
}""".splitlines()
    d = find_function(src, "fir")
    assert d == 1
    assert [p for p, _ in pointer_parameters(src, d)] == ["in", "out", "taps"]
    first, last = body_range(src, d)
    assert (first, last) == (1, 7)
    assert [p for p, _ in pointer_parameters(src, d) if not is_written(src, p, first, last)] == ["in", "taps"]


def test_row_views_of_a_parameter_are_followed():
    # softmax's shape: the loops read x[i], a view of the parameter `in` offset to the thread's row
    src = """__global__ void rows(float* out, const float* in, int cols) {
  const int r = threadIdx.x;
  const float* x = in + size_t(r) * cols;
  const float4* x4 = reinterpret_cast<const float4*>(x + 4);
  float* y = (out) + r;
  const float* other;
  other = in;                       // an assignment, not an initialiser: not followed
  for (int i = 0; i < cols; ++i) y[i] = x[i] + x4[0].x;
}""".splitlines()
    first, last = body_range(src, 1)
    assert derived_pointers(src, "in", first, last) == ("x", "x4")
    assert derived_pointers(src, "out", first, last) == ("y",)
    assert derived_pointers(src, "cols", first, last) == ()
    # a view that is written makes its parameter written (the non-const copy counts)
    assert is_written(src, "out", first, last) and not is_written(src, "in", first, 6)


def test_reader_never_fails_on_missing_sources(tmp_path):
    read = make_reader(source_map=(("/build/old", str(tmp_path)),))
    (tmp_path / "a.cu").write_text("line1\nline2\n")
    assert read("/build/old/a.cu") == ["line1", "line2"]
    assert read("/nowhere/b.cu") is None
