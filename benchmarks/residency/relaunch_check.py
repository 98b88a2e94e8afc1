#!/usr/bin/env python3
"""The L2 residency rule on the validation cases, with the evidence it asks for.

    python3 benchmarks/residency/relaunch_check.py [FOLDER]   (default: benchmarks/residency/relaunch_h200)

The validation cases' ncu bundles (kernels/*/recorded, benchmarks/accuracy/devices/h200) were
recorded with one launch per kernel, so the rule (analysis/residency.py: only a kernel the profile
saw launched again) never applies to them. FOLDER holds the ncu-collector validation cases recorded
again on the H200 (2026-11-28) with `gpa profile --collector ncu --launch-count 5`, the default:
each harness's launches are in the profile. Every variant whose optimizer is advised is priced with
the rule off and on (``coalescing.relaunched`` forced, the only difference) against the variant's
timing on that device (benchmarks/accuracy/devices/h200/timings.json: kernel durations and event
pairs). Prints the mean error both ways and every estimate the rule moves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.analysis import coalescing  # noqa: E402
from gpa_lsp.analysis.advisor import advise_bundle  # noqa: E402


def rows(folder: Path, timings: dict, relaunched: bool) -> list[tuple]:
    """(case, variant, optimizer, estimate, achieved by durations, by events, bound) per priced variant."""
    saved = coalescing.relaunched
    coalescing.relaunched = lambda ctx: relaunched
    try:
        out = []
        for b in sorted(folder.glob("*.ncu.gpabundle")):
            case = b.name.split(".")[0]
            meta = tomllib.loads((ROOT / "kernels" / case / "case.toml").read_text())
            k = next(k for k in advise_bundle(b).kernels if meta["kernel"] in k.demangled)
            advice = {a.optimizer: a for a in k.advice}
            o = timings.get((case, "original"))
            for v in meta.get("variant", []):
                a, n = advice.get(v["optimizer"]), timings.get((case, v["name"]))
                if a is None or not o or not n:
                    continue
                out.append((case, v["name"], v["optimizer"], a.estimated_speedup,
                            o["duration_ms"] / n["duration_ms"], o["median_ms"] / n["median_ms"], a.bounded_by))
        return out
    finally:
        coalescing.relaunched = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=ROOT / "benchmarks/residency/relaunch_h200")
    ap.add_argument("--timings", type=Path, default=ROOT / "benchmarks/accuracy/devices/h200/timings.json")
    args = ap.parse_args(argv)
    timings = {(r["case"], r["variant"]): r for r in json.loads(args.timings.read_text())["results"]}
    got = {rl: rows(args.folder, timings, rl) for rl in (False, True)}
    for rl, rs in got.items():
        dur = statistics.fmean(abs(r[3] - r[4]) / r[4] for r in rs)
        ev = statistics.fmean(abs(r[3] - r[5]) / r[5] for r in rs)
        print(f"rule {'on ' if rl else 'off'}: {len(rs)} priced variants, mean error {100 * dur:.1f}% by kernel "
              f"durations, {100 * ev:.1f}% by event pairs")
    for a, b in zip(got[False], got[True]):
        if abs(a[3] - b[3]) > 1e-3:
            print(f"  {a[0]} / {a[1]} ({a[2]}): {a[3]:.2f}x -> {b[3]:.2f}x (bounded by {b[6]}); achieved "
                  f"{a[4]:.2f}x by durations, {a[5]:.2f}x by events")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
