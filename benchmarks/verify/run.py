#!/usr/bin/env python3
"""Verify the top fixes of every case on the GPU machine, and what it costs.

For each ``kernels/<case>``: one bare run of its harness (build first, not timed), then
``gpa verify`` as a user runs it (top 3 fixes, 5 interleaved pairs, results stored in the case's
recorded bundle), timed as a whole. Writes ``verify.json``: per case the bare harness wall time,
the verification wall time, and per fix its status, estimate and measured speedup. The report
(``report.py``, here, no GPU) turns it into benchmarks/verify/README.md's figures.

    python3 benchmarks/verify/run.py --out verify.json [--budget S] [case ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.build import build  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.errors import GpaError  # noqa: E402
from gpa_lsp.profile import harness  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts  # noqa: E402
from gpa_lsp.verify.apply import worth_trying  # noqa: E402
from gpa_lsp.verify.runner import Options, advise, verify_report  # noqa: E402


def bare_wall(cfg) -> float:
    res = build(cfg)
    res.check()
    command, cwd, env = _harness_parts(cfg, res.output)
    t = time.monotonic()
    harness.run(command, cwd=cwd, env=env, timeout=cfg.harness.timeout)
    return time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--out", default="verify.json")
    ap.add_argument("--budget", type=float, default=0.0, help="stop starting cases after this many seconds")
    ap.add_argument("--top", type=int, default=3)
    args = ap.parse_args()
    cases = sorted(p.parent for p in (ROOT / "kernels").glob("*/case.toml"))
    if args.cases:      # in the order given (the most wanted first when the budget is short)
        by_name = {c.name: c for c in cases}
        cases = [by_name[n] for n in args.cases if n in by_name]
    t0 = time.monotonic()
    rows = []
    for case in cases:
        if args.budget and time.monotonic() - t0 > args.budget:
            rows.append({"case": case.name, "skipped": "budget"})
            continue
        cfg = load(case)
        row = {"case": case.name}
        try:
            report = advise(cfg.bundle_path, cfg)
            if not worth_trying(report, args.top):
                row["skipped"] = "no advice with a mechanical fix in the top 3"
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            row["bare_s"] = round(bare_wall(cfg), 3)
            t = time.monotonic()
            got, results = verify_report(cfg, cfg.bundle_path, report, Options(top=args.top, dynamic=True, pairs=5,
                                                                              budget_s=120.0),
                                         log=lambda m: print(f"  {case.name}: {m}", flush=True))
            row["verify_s"] = round(time.monotonic() - t, 3)
            row["before"] = [[a.optimizer, a.estimated_speedup] for k in report.kernels[:1] for a in k.advice]
            row["after"] = [[a.optimizer, a.effective_speedup, a.verification.status if a.verification else None,
                             a.verification.speedup if a.verification else None] for k in got.kernels[:1] for a in k.advice]
        except GpaError as exc:
            row["error"] = exc.message
        rows.append(row)
        print(json.dumps(row), flush=True)
        Path(args.out).write_text(json.dumps({"rows": rows, "wall_s": round(time.monotonic() - t0, 1)}, indent=1))
    # again at the end: a case skipped last (or every case skipped) is in the file too
    Path(args.out).write_text(json.dumps({"rows": rows, "wall_s": round(time.monotonic() - t0, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
