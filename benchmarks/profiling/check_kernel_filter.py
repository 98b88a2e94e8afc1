"""Does sampling only ``[profile] kernels`` keep that kernel's samples, and what does it save?

    PYTHONPATH=. python3 benchmarks/profiling/check_kernel_filter.py [PROJECT_DIR] [--kernel chase] [--json OUT]

Runs the CUPTI collection (no unit throughput) twice per round, without and with the kernel
filter (CUPTI start/stop control at the launches, gpa_inject.c), and prints per round the
samples of the named kernel and the wall time of each. The filter is right when the kernel's
samples agree (they are statistical: within a few percent). Needs a GPU; standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.profile.collect import collect_result  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(Path(__file__).with_name("long_1s")))
    ap.add_argument("--kernel", default="chase")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    config = load(args.project)
    base = replace(config, profile=replace(config.profile, throughput=False, min_samples=0))
    filt = replace(base, profile=replace(base.profile, kernels=(args.kernel,)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        collect_result(base, collector="cupti", out=Path(tmp) / "w.gpabundle")   # build + warm
        for i in range(args.rounds):
            row = {}
            for label, cfg in (("all", base), ("filtered", filt)):
                t = time.monotonic()
                res = collect_result(cfg, collector="cupti", out=Path(tmp) / f"{label}.gpabundle", build=False)
                per = {}
                for pc in res.profile.pcs:
                    per[pc.function] = per.get(pc.function, 0) + pc.total
                row[label] = {"wall_s": round(time.monotonic() - t, 3), "samples": per,
                              "kernel_samples": sum(v for k, v in per.items() if args.kernel in k),
                              "notes": res.notes}
            rows.append(row)
            print(f"round {i}: {args.kernel} samples all {row['all']['kernel_samples']} vs filtered "
                  f"{row['filtered']['kernel_samples']}; wall {row['all']['wall_s']} s vs {row['filtered']['wall_s']} s; "
                  f"kernels sampled with the filter: {sorted(row['filtered']['samples'])}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
