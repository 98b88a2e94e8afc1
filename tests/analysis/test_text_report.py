"""The text report of `gpa analyze` / `gpa advise` (analysis/text_report.py, analysis/quickfix.py).

On every recorded case: with ``--top 3`` it fits a 100x60 terminal, says what "ratio" means in
words, prints fixes as sentences and hotspots told apart by SASS opcode and offset, uses the
hover's stall-reason names, and shows the full kernel signature once. And once in a real
terminal (tmux): what a person sees is what was printed, nothing wrapped or cut.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from gpa_lsp.analysis.model import Advice, Fix, KernelReport, Location, Report
from gpa_lsp.analysis.quickfix import describe_fix, fix_edits
from gpa_lsp.analysis.text_report import render_text, select, short_name
from gpa_lsp.cli import main
from gpa_lsp.profile.reasons import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
# the cases with a recorded bundle (new cases get theirs from the GPU machine later)
CASES = sorted({p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/*.gpabundle")
                if (p.parent.parent / "gpa.toml").is_file()})
# GPA category names that are not also a CUPTI reason name nor a plain word (the hover shows the
# CUPTI names; "limited by synchronization" is the limiter, in words)
CATEGORY_ONLY = sorted(c for c in CATEGORIES if "_" in c and c != "not_selected")


def _advise(capsys, *args: str) -> str:
    assert main(["advise", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("case", CASES)
def test_top3_fits_a_screen_and_reads_as_sentences(case, capsys):
    text = _advise(capsys, str(ROOT / "kernels" / case), "--top", "3")
    lines = text.splitlines()
    assert len(lines) <= 60, f"{case}: {len(lines)} lines\n{text}"
    wide = [l for l in lines if len(l) > 100]
    assert not wide, f"{case}: lines over 100 columns: {wide}"
    assert "Hot loop loop" not in text and "{'" not in text and not re.search(r"\bratio\b", text)
    assert "Explains " in text or "A launch change" in text
    # every advice shows its estimate: "est. 1.45x", or beside what verification measured
    # ("tried: no gain (measured 1.00x ..., estimated 1.04x, H100)": saxpy_stream's two)
    assert " est. " in text or re.search(r"estimated \d+\.\d+x", text)
    for cat in CATEGORY_ONLY:
        assert not re.search(rf"\b{cat}\b", text), f"{case}: GPA category {cat} in the text"
    # short name in the header, the full signature exactly once
    head = next(l for l in lines if l.startswith("Kernel "))
    name = head.split()[1]
    assert "(" not in name
    sigs = [l for l in lines if l.strip().startswith(name + "(")]
    assert len(sigs) == 1, f"{case}: signature lines {sigs}"
    # at most 3 advice blocks, numbered
    assert sum(bool(re.match(r"  \d\. ", l)) for l in lines) <= 3
    # hotspot rows: an opcode and an offset each, none repeated within an advice
    for block in re.split(r"\n  \d\. ", text)[1:]:
        rows = [l.strip() for l in block.splitlines() if re.match(r"\s+\d+(\.\d+)?%  \w+: ", l)]
        assert len(rows) == len(set(rows)), rows
        for r in rows:
            assert re.search(r": [A-Z0-9_.]+ at 0x[0-9a-f]{4}", r), r


def test_hotspot_double_fix_sentence_and_dedup(capsys):
    text = _advise(capsys, str(ROOT / "kernels" / "hotspot_double"), "--top", "1")
    # the recording holds the H100's verification: the measured figure leads, the estimate beside it
    assert "1. Strength Reduction at original.cu:33: measured 1.28x" in text and "est. 1.35x" in text
    assert "Fix: change `2.0` to `2.0f` at original.cu:32:54 and 33:54." in text
    # the four pipe stalls on line 33 were four identical rows; now one row naming the copies
    rows = [l for l in text.splitlines() if "mio_throttle: F2F.F64.F32" in l and "(line 33)" in l]
    assert len(rows) == 1 and rows[0].count("0x0") >= 3
    assert "of the kernel's stall samples (the stalls the change removes)" in text
    assert "(1 more advice" not in text.splitlines()[-1] or "--top" in text.splitlines()[-1]


def test_block_size_and_restrict_sentences(capsys):
    fan2 = _advise(capsys, str(ROOT / "kernels" / "fan2_threads"), "--top", "1")
    assert "Fix: launch with 128 threads per block instead of 16 at original.cu:27" in fan2
    assert "A launch change" in fan2 and "Explains 0%" not in fan2
    fir = _advise(capsys, str(ROOT / "kernels" / "restrict_fir"), "--top", "1")
    fix = " ".join(fir.split("Fix: ")[1].split(".\n")[0].split())
    assert fix == ("change `float* in` to `const float* __restrict__ in` at original.cu:10:38 and "
                   "`float* coef` to `const float* __restrict__ coef` at 10:49 in fir_bank's parameters")
    block = fir.split("Fix: ")[1].split("Where")[0]
    assert all(line.count("`") % 2 == 0 for line in block.splitlines())      # code spans not broken


def test_min_speedup_and_top_apply_to_json(capsys):
    import json
    case = str(ROOT / "kernels" / "hotspot_double")
    data = json.loads(_advise(capsys, case, "--json", "-", "--min-speedup", "1.1"))
    est = [a["estimated_speedup"] for a in data["kernels"][0]["advice"]]
    assert est and min(est) >= 1.1
    data = json.loads(_advise(capsys, case, "--json", "-", "--top", "1"))
    assert len(data["kernels"][0]["advice"]) == 1
    text = _advise(capsys, case, "--min-speedup", "99")
    assert "No change is estimated to speed it up by 99.00x or more." in text


@pytest.mark.parametrize("bad", [["--top", "0"], ["--top", "x"], ["--min-speedup", "0.5"], ["--min-speedup", "nan"]])
def test_bad_options_are_usage_errors(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["advise", str(ROOT / "kernels" / "hotspot_double"), *bad])
    assert exc.value.code == 2
    assert "gpa advise: error: argument" in capsys.readouterr().err


# ---- the fix sentence for every Fix kind (model.py's docstring) ----------------------------

SRC = {
    "/src/k.cu": [
        "#include <cuda.h>",                                            # 1
        "__device__ float helper(float x) { return x * 2.0; }",         # 2
        "__global__ void k(float* out, float* in, int n) {",            # 3
        "  for (int i = 0; i < n; ++i) {",                              # 4
        "    out[i] = in[i] * 0.5 + 2.0 * in[i] - 0.5;",                # 5
        "  }",                                                          # 6
        "}",                                                            # 7
        "void host() { k<<<1, 16>>>(0, 0, 0); }",                       # 8
    ],
}


def _reader(path):
    return SRC.get(path)


def _cols(line: str, lit: str) -> list[list[int]]:
    return [[m.start(), m.end()] for m in re.finditer(re.escape(lit), line)]


def test_fix_sentences_for_every_kind():
    line5 = SRC["/src/k.cu"][4]
    cols = _cols(line5, "0.5") + _cols(line5, "2.0")
    s = describe_fix(Fix("float_literal", "/src/k.cu", 5, {"columns": cols}), _reader)
    assert s == "change `0.5` to `0.5f` at k.cu:5:22 and 5:42 and `2.0` to `2.0f` at 5:28"
    assert describe_fix(Fix("unroll", "/src/k.cu", 4, {"factor": 2}), _reader) == \
        "put `#pragma unroll 2` before the loop at k.cu:4 (unroll it 2 times)"
    assert "keep the loop rolled" in describe_fix(Fix("unroll", "/src/k.cu", 4, {"factor": 1}), _reader)
    fix = Fix("restrict", "/src/k.cu", 3, {"function": "_Z1kPfS_i", "parameter": "in"})
    got = fix_edits(fix, _reader)
    assert got is not None
    s = describe_fix(fix, _reader, edits=lambda: got[1])
    assert s == "change `float* in` to `const float* __restrict__ in` at k.cu:3:31 in k's parameters"
    assert describe_fix(Fix("inline", "/src/k.cu", 2, {"function": "_Z6helperf"}), _reader) == \
        "mark the device function helper `__forceinline__` at k.cu:2"
    assert "`__noinline__`" in describe_fix(Fix("noinline", "/src/k.cu", 2, {"function": "helper"}), _reader)
    assert describe_fix(Fix("fast_math", None, None, {"flag": "--use_fast_math"}), _reader) == \
        "build with `--use_fast_math` (add it to [build] nvcc_flags in gpa.toml)"
    fix = Fix("block_size", "/src/k.cu", 8, {"size": 128, "current": 16, "columns": [21, 23], "dims": [16]})
    got = fix_edits(fix, _reader)
    s = describe_fix(fix, _reader, edits=lambda: got[1] if got else None)
    assert s == "launch with 128 threads per block instead of 16 at k.cu:8 (change `16` to `128` at k.cu:8:22)"
    assert describe_fix(Fix("vectorize", "/src/k.cu", 5, {"width": 4}), _reader) == "vectorize at k.cu:5 (width 4)"
    # no source: still a sentence, from the params alone
    assert describe_fix(Fix("float_literal", "/gone.cu", 5, {"columns": [[1, 4]]}), _reader) == \
        "add an `f` suffix to the double literals at gone.cu:5"


def test_fast_math_edit_targets_the_config_file(tmp_path):
    cfg = tmp_path / "gpa.toml"
    cfg.write_text('[build]\nnvcc_flags = ["-O3"]\n')
    title, edits = fix_edits(Fix("fast_math", None, None, {"flag": "--use_fast_math"}), _reader,
                             config_file=str(cfg))
    assert "--use_fast_math" in title
    assert edits[0].file == str(cfg) and '"--use_fast_math"' in edits[0].text
    assert fix_edits(Fix("fast_math", None, None, {}), _reader) is None      # no config to edit


# ---- the verification (gpa_lsp/verify) ------------------------------------------------------

def _tiny_report(**advice) -> Report:
    adv = Advice("strength_reduction", "Strength Reduction", "code", 1.27, 0.2, 20000.0, "Use float literals.",
                 location=Location("/src/k.cu", 5), estimate_low=1.1, estimate_high=1.4, kernel_samples=100000,
                 **advice)
    k = KernelReport("_Z1kPfS_i", "k(float*, float*, int)", 100000, 1.0, "latency", (adv,), file="/src/k.cu", line=3)
    return Report({"name": "NVIDIA H100 80GB HBM3"}, "cupti", (k,), total_samples=100000, source="x.gpabundle")


def test_measured_figure_when_the_advice_was_verified():
    from gpa_lsp.verify.model import Verification
    assert "est. 1.27x (1.10-1.40x)" in render_text(_tiny_report(), reader=_reader)
    v = Verification("measured", estimated=1.27, speedup=1.31, low=1.28, high=1.34, pairs=10,
                     device="NVIDIA H100 80GB HBM3")
    text = render_text(_tiny_report(verification=v), reader=_reader)
    assert "1. Strength Reduction at k.cu:5: measured 1.31x (1.28-1.34), est. 1.27x, H100" in text
    v = Verification("static", estimated=1.27, static_speedup=1.12)
    text = render_text(_tiny_report(verification=v), reader=_reader)
    assert "est. 1.27x (1.10-1.40x)" in text and "Compiled: re-estimated 1.12x" in text
    # --min-speedup and the order go by what was measured, not the estimate
    v = Verification("measured", estimated=1.27, speedup=1.01, low=1.0, high=1.02, device="NVIDIA H100 80GB HBM3")
    assert select(_tiny_report(verification=v), min_speedup=1.05).kernels[0].advice == ()


def test_low_confidence_is_said():
    report = _tiny_report()
    few = replace(report.kernels[0], advice=(replace(report.kernels[0].advice[0], kernel_samples=800),))
    text = render_text(replace(report, kernels=(few,)), reader=_reader)
    assert "(low confidence: 800 samples: the sampling alone allows " in text


def test_short_names_and_selection():
    report = _tiny_report()
    assert short_name(report.kernels[0]) == "k"
    templ = replace(report.kernels[0], demangled="void ns::reduce<float, 256>(float const*, float*)")
    assert short_name(templ) == "ns::reduce<float, 256>"
    assert select(report, min_speedup=1.3).kernels[0].advice == ()
    assert select(report, kernel="nomatch").kernels == ()


# ---- in a real terminal -------------------------------------------------------------------

def _tmux() -> str | None:
    found = shutil.which("tmux")
    if found:
        return found
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "install", "-y", "-q", "tmux"], ["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "tmux"]):
            subprocess.run(cmd, env=env, capture_output=True, timeout=300, check=False)
            if shutil.which("tmux"):
                break
    return shutil.which("tmux")


def test_report_on_a_real_terminal_screen(tmp_path):
    tmux = _tmux()
    if tmux is None:
        pytest.skip("tmux is not installed and `apt-get install -y tmux` did not install it")
    case = ROOT / "kernels" / "hotspot_double"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TERM="xterm-256color", LC_ALL="C.UTF-8")
    expected = subprocess.run([sys.executable, "-m", "gpa_lsp.cli", "advise", str(case), "--top", "3"],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    done = tmp_path / "done"
    sock = f"gpa-test-{uuid.uuid4().hex[:8]}"
    cmd = (f"clear; {sys.executable} -m gpa_lsp.cli advise {case} --top 3; "
           f"touch {done}; sleep 60")
    base = [tmux, "-L", sock, "-f", "/dev/null"]
    subprocess.run([*base, "new-session", "-d", "-x", "100", "-y", "60", "-s", "report", "sh", "-c", cmd],
                   cwd=ROOT, env=env, check=True, timeout=30)
    try:
        deadline = time.time() + 60
        while not done.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert done.exists(), "the report did not finish in the terminal"
        time.sleep(0.3)
        size = subprocess.run([*base, "display-message", "-p", "-t", "report", "#{pane_width}x#{pane_height}"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert size == "100x60"
        screen = subprocess.run([*base, "capture-pane", "-p", "-t", "report"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, check=False)
    (tmp_path / "screen.txt").write_text(screen)
    rows = screen.rstrip("\n").split("\n")
    want = expected.rstrip("\n").split("\n")
    # everything printed is on the screen, row for row: nothing wrapped, cut or scrolled away
    got = [r.rstrip() for r in rows[:len(want)]]
    assert got == [w.rstrip() for w in want], screen
    assert all(r.strip() == "" for r in rows[len(want):])
    assert rows[0].startswith("GPA advice from ")
    assert any(r.startswith("  1. Strength Reduction at original.cu:33") for r in rows)
    assert any("Fix: change `2.0` to `2.0f` at original.cu:32:54 and 33:54." in r for r in rows)


def test_the_share_is_worded_from_the_advice_and_no_optimizer_is_imported():
    """The share's wording comes from the advice itself (``Advice.hides_latency``, set by the
    advisor from the estimator), so the presenters of a saved report import no optimizer."""
    assert "of the kernel's stall samples (the stalls the change removes)" in render_text(_tiny_report(), reader=_reader)
    text = render_text(_tiny_report(hides_latency=True), reader=_reader)
    assert "of the kernel's samples (stalls on these instructions while no warp could issue" in " ".join(text.split())
    code = ("import sys, gpa_lsp.analysis.text_report, gpa_lsp.analysis.html_report, gpa_lsp.analysis.diff; "
            "print(sorted(m for m in sys.modules if m.startswith(('gpa_lsp.analysis.optimizers', 'gpa_lsp.analysis.advisor'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
