"""`gpa diff A B` (analysis/diff.py) on every case: the original recording vs the improved one.

The improved bundles were recorded from improved.cu built under the name original.cu, so the
diff must find B's source by content (the manifest's sha256), align the two files, and compare
time per launch, time by stall reason and time per line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_recording as load_report
from gpa_lsp.analysis.diff import diff_reports, render_diff_text
from gpa_lsp.cli import main
from gpa_lsp.profile.bundle import read_bundle

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/improved/cupti.gpabundle"))
_CACHE: dict[str, dict] = {}


def _bundles(case: str) -> tuple[Path, Path]:
    rec = ROOT / "kernels" / case / "recorded"
    return rec / "cupti.gpabundle", rec / "improved" / "cupti.gpabundle"


def _diff(case: str) -> dict:
    if case not in _CACHE:
        a, b = _bundles(case)
        _CACHE[case] = diff_reports(load_report(a), load_report(b))
    return _CACHE[case]


def _mean_duration(bundle: Path, name: str) -> float:
    k = next(k for k in read_bundle(bundle).profile.kernels if k.name == name)
    d = [l.duration_ns for l in k.launches if l.duration_ns]
    return int(sum(d) / len(d))


def test_cases_exist():
    assert len(CASES) >= 17


@pytest.mark.parametrize("case", CASES)
def test_original_vs_improved(case):
    d = _diff(case)
    a_path, b_path = _bundles(case)
    assert d["a"]["bundle"] == str(a_path) and d["b"]["bundle"] == str(b_path)
    (k,) = [k for k in d["kernels"] if k["a"] and k["b"]]
    assert k["unit"] == "ns_per_launch"
    da, db = _mean_duration(a_path, k["a"]["mangled"]), _mean_duration(b_path, k["b"]["mangled"])
    assert k["a"]["duration_ns"] == da and k["b"]["duration_ns"] == db
    assert k["speedup"] == pytest.approx(da / db, rel=1e-3)
    # every sample is somewhere: the reasons and the lines each add up to the time per launch
    assert sum(r["a"] for r in k["reasons"]) == pytest.approx(da, rel=1e-3)
    assert sum(r["b"] for r in k["reasons"]) == pytest.approx(db, rel=1e-3)
    assert sum(r["a_value"] for r in k["lines"]) == pytest.approx(da, rel=1e-3)
    assert sum(r["b_value"] for r in k["lines"]) == pytest.approx(db, rel=1e-3)
    for r in k["reasons"]:
        assert r["delta"] == pytest.approx(r["b"] - r["a"], abs=2e-3)
    # B's lines are read from the file B was built from (found by its sha256), not original.cu
    improved = (ROOT / "kernels" / case / "improved.cu").read_text().splitlines()
    original = (ROOT / "kernels" / case / "original.cu").read_text().splitlines()
    folder = ROOT / "kernels" / case
    for r in k["lines"]:
        b, a = r["b"], r["a"]
        if b and b["text"] is not None and Path(b["file"]).parent == folder:      # not a CUDA header
            assert Path(b["file"]).name == "improved.cu"
            assert b["text"] == improved[b["line"] - 1].strip()
        if a and a["text"] is not None and Path(a["file"]).parent == folder:
            assert Path(a["file"]).name == "original.cu"
            assert a["text"] == original[a["line"] - 1].strip()
        if r["change"] == "vanished":
            assert r["b_value"] <= 0.1 * r["a_value"]
    text = render_diff_text(d)
    assert all(len(l) <= 100 for l in text.splitlines()), text
    assert f"Kernel {k['name']}: " in text and "By stall reason" in text


def test_hotspot_double_what_the_float_literals_did():
    k = _diff("hotspot_double")["kernels"][0]
    assert 1.2 < k["speedup"] < 1.4
    mio = next(r for r in k["reasons"] if r["reason"] == "mio_throttle")
    assert mio["delta"] < 0 and mio["change"] == "shrank"
    line33 = next(r for r in k["lines"] if r["a"] and r["a"]["line"] == 33)
    assert line33["b"]["line"] == 33 and "2.0f * t" in line33["b"]["text"]
    assert line33["change"] == "shrank" and line33["reasons"][0]["reason"] == "mio_throttle"


def test_a_recording_against_itself_changes_nothing():
    a, _ = _bundles("hotspot_double")
    rep = load_report(a)
    d = diff_reports(rep, rep)
    (k,) = d["kernels"]
    assert k["speedup"] == 1.0
    assert all(r["change"] == "same" and r["delta"] == 0 for r in k["reasons"] + k["lines"])
    assert "no line changed by 1% of A's time or more" in render_diff_text(d)


def test_cli_text_and_json(tmp_path, capsys):
    a, b = _bundles("fan2_threads")
    assert main(["diff", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "Kernel Fan2: " in text and "x faster" in text and "long_scoreboard" in text
    out = tmp_path / "d.json"
    assert main(["diff", str(a), str(b), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kernels"][0]["speedup"] > 3
    assert main(["diff", str(a), str(b), "--kernel", "nomatch"]) == 0
    assert "No kernel to compare." in capsys.readouterr().out
    assert main(["diff", str(a.parent), str(b)]) == 2
    assert "is a folder, not a .gpabundle" in capsys.readouterr().err
