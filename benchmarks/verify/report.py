#!/usr/bin/env python3
"""benchmarks/verify/README.md from ``verify.json`` (written on the GPU machine by ``run.py``).

Figures: the time to verify the top 3 fixes of a case as a ratio to one run of its harness; and
the share of the top-3 advice (with a mechanical fix, measured) that measures below 1.02x as
ranked before verification and after it.

    python3 benchmarks/verify/report.py [verify.json]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NO_GAIN = 1.02


def figures(rows: list[dict]) -> dict:
    ratios, before, after, top_after = [], [0, 0], [0, 0], [0, 0]
    for r in rows:
        if "verify_s" not in r or not r.get("bare_s"):
            continue
        ratios.append(r["verify_s"] / r["bare_s"])
        measured = {o: m for o, _, st, m in r["after"] if st == "measured" and m is not None}
        for o, _ in r["before"][:3]:
            if o in measured:
                before[0] += measured[o] < NO_GAIN
                before[1] += 1
        # recommended after verification: a figure at the editor's information threshold (1.02x);
        # below it the diagnostic is a hint ("tried: no gain")
        shown = [(o, st, m) for o, e, st, m in r["after"] if e >= NO_GAIN]
        for i, (o, st, m) in enumerate(shown[:3]):
            if o in measured:
                after[0] += measured[o] < NO_GAIN
                after[1] += 1
                if i == 0:
                    top_after[0] += measured[o] < NO_GAIN
                    top_after[1] += 1
    return {"cases": len(ratios), "ratio_median": statistics.median(ratios) if ratios else None,
            "ratio_max": max(ratios) if ratios else None, "before": before, "after": after, "top_after": top_after}


def render(doc: dict) -> str:
    rows = doc["rows"]
    f = figures(rows)

    def share(p):
        return f"{p[0]}/{p[1]}" + (f" ({100 * p[0] / p[1]:.0f}%)" if p[1] else "")
    out = ["# Verification: cost and effect", "",
           "Measured on the H100 by `benchmarks/verify/run.py` (`gpa verify` on every case: top 3 fixes, 5 "
           "interleaved pairs), turned into this page by `report.py`.", "",
           f"- cases verified: {f['cases']}",
           (f"- time to verify the top 3 fixes / one harness run: median {f['ratio_median']:.1f}x, "
            f"worst {f['ratio_max']:.1f}x" if f["ratio_median"] else "- time ratio: —"),
           f"- top-3 advice that measures below 1.02x, ranked as estimated: {share(f['before'])}",
           f"- ... recommended after verification (what was tried and gained nothing becomes a hint): {share(f['after'])}",
           f"- top-ranked advice that measures below 1.02x after verification: {share(f['top_after'])}", "",
           "| case | bare harness s | verify s | ratio | before (estimate) | after (figure, status) |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if "verify_s" not in r:
            out.append(f"| {r['case']} | — | — | — | {r.get('error') or r.get('skipped', '')} | |")
            continue
        before = ", ".join(f"{o} {e:.2f}x" for o, e in r["before"][:3])
        after = ", ".join(f"{o} {e:.2f}x {st or ''}".strip() for o, e, st, _ in r["after"][:3])
        out.append(f"| {r['case']} | {r['bare_s']:.2f} | {r['verify_s']:.1f} | {r['verify_s'] / r['bare_s']:.1f}x "
                   f"| {before} | {after} |")
    return "\n".join(out) + "\n"


def main() -> int:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "verify.json"
    doc = json.loads(src.read_text())
    (HERE / "README.md").write_text(render(doc))
    print(render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
