"""Marginal advice (config.RECOMMENDED, 1.05x): shown but not recommended, in every place a person looks.

Recorded bundles (H200, ncu): points_aos_transform, whose only advice is Global Memory Coalescing at
1.046x on line 23 (its smem_stage measured 0.95x: nothing helps this kernel near its DRAM roof), and
l2norm_rows, whose Global Memory Coalescing (line 23) is estimated far above the threshold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.html_report import render_html
from gpa_lsp.analysis.sarif import to_sarif
from gpa_lsp.analysis.text_report import render_text
from gpa_lsp.cli import main
from gpa_lsp.config import RECOMMENDED, AdviceConfig, load
from gpa_lsp.server.features.lenses import kernel_summary

ROOT = Path(__file__).resolve().parents[2]
_CACHE: dict = {}


def _report(case: str):
    if case not in _CACHE:
        cfg = load(ROOT / "kernels" / case)
        _CACHE[case] = advise_bundle(cfg.bundle_path, config=cfg)
    return _CACHE[case]


def _kernel(case: str):
    (k,) = [k for k in _report(case).kernels if k.advice]
    return k


def test_threshold_is_the_editors_default():
    assert RECOMMENDED == 1.05 and AdviceConfig().information == RECOMMENDED


def test_points_aos_transform_top_advice_is_marginal():
    k = _kernel("points_aos_transform")
    top = k.advice[0]
    assert top.optimizer == "global_memory_coalescing" and top.location.line == 23
    assert 1.02 < top.estimated_speedup < RECOMMENDED and top.marginal
    assert all(a.marginal for a in k.advice)


def test_text_report_says_nothing_is_recommended(capsys):
    assert main(["advise", str(ROOT / "kernels" / "points_aos_transform"), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Nothing here is estimated to gain 1.05x or more" in out
    # 1.046x would print as 1.05x: the mark gives the third decimal
    assert "1. Global Memory Coalescing at original.cu:23: est. 1.05x, marginal: 1.046x" in out


def test_text_report_recommends_above_the_threshold():
    text = render_text(_report("l2norm_rows"), top=3)
    head = next(line for line in text.splitlines() if line.startswith("  1. "))
    assert head.startswith("  1. Global Memory Coalescing at original.cu:23: est.") and "marginal" not in head
    assert "Nothing here is estimated" not in text


def test_html_marks_marginal_advice():
    page = render_html(_report("points_aos_transform"))
    assert "Nothing here is estimated to gain 1.05x or more" in page and "marginal: 1.046x" in page
    assert "marginal" not in render_html(_report("l2norm_rows"), top=1)


def test_sarif_level_none_for_marginal_advice():
    log = to_sarif(_report("points_aos_transform"), srcroot=ROOT)
    (res,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "global_memory_coalescing"]
    assert res["level"] == "none" and res["properties"]["marginal"] is True
    log = to_sarif(_report("l2norm_rows"), srcroot=ROOT)
    res = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "global_memory_coalescing")
    assert res["level"] == "warning" and "marginal" not in res["properties"]


@pytest.mark.parametrize("information, want", [
    (RECOMMENDED, "| nothing over 1.05x (marginal: Global Memory Coalescing est. 1.05x)"),
    (1.02, "| top: Global Memory Coalescing est. 1.05x"),      # a workspace that lowered [advice] information
])
def test_code_lens_follows_the_information_threshold(information, want):
    assert kernel_summary(_kernel("points_aos_transform"), information).endswith(want)


def test_sarif_cli_round_trip(capsys):
    assert main(["advise", str(ROOT / "kernels" / "points_aos_transform"), "--sarif", "-", "--srcroot", str(ROOT)]) == 0
    levels = {r["ruleId"]: r["level"] for r in json.loads(capsys.readouterr().out)["runs"][0]["results"]}
    assert levels.get("global_memory_coalescing") == "none"
