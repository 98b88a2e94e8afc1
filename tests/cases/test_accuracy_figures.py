"""The accuracy report's split figures say which top advice they could not judge
(benchmarks/accuracy/variants.figures, ``top_unjudged``): advice no variant of its case carries has no
timing, so it is neither a help nor a false positive; the report lists those cases by name instead of
leaving them out silently. A case where the advisor recommends nothing (every advice marginal, under
``config.RECOMMENDED``) is a miss when one of its variants helps (``silent``), and is listed as
rightly silent when none does: withholding advice is not free."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "accuracy"))   # report.py's own imports (variants)
spec = importlib.util.spec_from_file_location("accuracy_report", ROOT / "benchmarks" / "accuracy" / "report.py")
report = importlib.util.module_from_spec(spec)
sys.modules["accuracy_report"] = report      # its dataclasses look their module up
spec.loader.exec_module(report)
import variants  # noqa: E402


def test_every_validation_case_with_advice_is_judged_or_named():
    env = json.loads((ROOT / "benchmarks" / "accuracy" / "timings.json").read_text())
    cases = sorted(p.parent for p in (ROOT / "kernels").glob("*/case.toml")
                   if tomllib.loads(p.read_text()).get("split") == "validation")
    rows, advice = report.variant_rows([(c, None) for c in cases], variants.timings_by(env, "median_ms"))
    rows = [r for r in rows if r.split == "validation"]
    advice = [c for c in advice if c.split == "validation"]
    for verified in (False, True):
        f = variants.figures(rows, advice, verified)
        ranked = [c for c in advice if (c.vranked if verified else c.ranked)]
        assert f["top_judged"] - len(f["silent"]) + len(f["top_unjudged"]) == len(ranked)
        # nothing recommended: heat2d_naive (Strength Reduction 1.04x; its float literals 1.03x) and
        # points_aos_transform (nothing helps) rightly; scatter_add_rows after verification (its
        # Restrict Pointer and Loop Unrolling measured 1.00x) misses smem_hot's 3.35x
        assert {"heat2d_naive", "points_aos_transform"} <= set(f["rightly_silent"])
        assert ("scatter_add_rows" in f["silent"]) == verified
        # scan_blocks' shuffle_scan, which carries its Warp Balance advice, was timed on the H200 only
        # (benchmarks/accuracy/devices/h200): no timing of this report judges that advice
        assert "scan_blocks (warp_balance)" in f["top_unjudged"]
        # a variant judges every advice its change carries out (``also``): bilinear_resize's coalescing
        # advice by uchar4, whose change did not help
        assert "bilinear_resize (global_memory_coalescing)" not in f["top_unjudged"]
    judged = [r for r in rows if r.case == "bilinear_resize" and r.optimizer == "global_memory_coalescing"]
    assert [r.variant for r in judged] == ["uchar4"] and judged[0].achieved < variants.HELPS


def _row(case, variant, optimizer, achieved, estimate):
    return variants.VariantRow(case, "validation", variant, optimizer, "helps", "", achieved, estimate=estimate,
                               effective=estimate)


def test_silence_is_judged_arithmetic():
    """Arithmetic of ``figures`` on hand-written rows (a unit test of the counting, no profile):
    a case with nothing recommended is a miss where a variant helped, and out of the figure where
    none did."""
    rows = [_row("a", "fix", "x", 2.0, 1.9), _row("b", "fix", "y", 1.5, 1.03), _row("c", "fix", "z", 1.01, 1.04)]
    cases = [variants.CaseAdvice("a", "validation", ["x"], ["x"]), variants.CaseAdvice("b", "validation"),
             variants.CaseAdvice("c", "validation")]
    f = variants.figures(rows, cases, verified=False)
    assert f["top_judged"] == 2 and f["top_helps"] == 0.5
    assert f["silent"] == ["b"] and f["rightly_silent"] == ["c"]
    # every estimate still counts in the error, marginal or not
    assert f["pairs"] == 3
