#!/usr/bin/env python3
"""Join spread.sh's outputs into ``spread.h100.jsonl``: one line per (walk, rows, alu) with the
256-thread grid's and the 64-thread grid's times and the 256-thread grid's unit shares under ncu
(``l1`` elapsed average over all SMs, ``l1_max`` the busiest SM's, ``issue`` over active cycles,
``l2``, ``dram``).

    python benchmarks/saturation/spread_table.py OUTDIR > benchmarks/saturation/spread.h100.jsonl
"""

import csv
import json
import sys
from pathlib import Path

METRICS = {"l1": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
           "l1_max": "l1tex__throughput.max.pct_of_peak_sustained_elapsed",
           "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed"}


def main(out: Path) -> None:
    timed = [json.loads(line) for line in (out / "spread.jsonl").read_text().splitlines() if line.strip()]
    lines = [line for line in (out / "spread_ncu.csv").read_text().splitlines() if not line.startswith("==")]
    rows = list(csv.reader(lines))
    head, data = rows[0], rows[2:]          # rows[1]: units
    orig = [t for t in timed if t["block"] == 256]
    spread = {(t["walk"], t["rows"], t["alu"]): t for t in timed if t["block"] == 64}
    for t, r in zip(orig, data, strict=True):
        s = spread[(t["walk"], t["rows"], t["alu"])]
        units = {k: float(r[head.index(m)].replace(",", "")) for k, m in METRICS.items()}
        print(json.dumps({"walk": t["walk"], "rows": t["rows"], "cols": t["cols"], "alu": t["alu"], "sms": t["sms"],
                          "blocks": t["blocks"], "ms": t["ms"], "spread_blocks": s["blocks"], "spread_ms": s["ms"],
                          "warps_per_sm": 8, **units}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
