"""Turn record.sh's output into benchmarks/reorder/prefetch_<device>.json: per configuration the median
time (5 timed runs) and, from one ncu launch, the issue share of peak, warp instructions executed and
warps active per scheduler.

    python3 benchmarks/reorder/table.py RECORDED_DIR DEVICE      (e.g. recorded h200)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gpa_lsp.profile.throughput import parse_raw_csv  # noqa: E402

NCU = {"issue_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
       "instructions": "smsp__inst_executed.sum",
       "warps_per_scheduler": "smsp__warps_active.avg.per_cycle_active"}


def rows(folder: Path) -> list[dict]:
    configs = [line.split() for line in (folder / "prefetch_list.txt").read_text().splitlines() if line.strip()]
    times = {tuple(p[:2]): float(p[2].split("=")[1])
             for p in (line.split() for line in (folder / "prefetch_times.txt").read_text().splitlines()) if len(p) == 3}
    launches = parse_raw_csv((folder / "prefetch_ncu.csv").read_text(), wanted=set(NCU.values()))
    out = []
    for cfg, (_, got_raw) in zip(configs, launches):
        got = {k: got_raw[m] for k, m in NCU.items()}
        out.append({"config": cfg[0], "warps_per_sm": int(cfg[1].split("=")[1]), "median_ms": times[tuple(cfg)],
                    **{k: round(v, 2) for k, v in got.items()}})
    return out


if __name__ == "__main__":
    folder, device = Path(sys.argv[1]), sys.argv[2]
    dest = Path(__file__).with_name(f"prefetch_{device}.json")
    doc = {"device": (folder / "device.txt").read_text().strip(), "rows": rows(folder)}
    dest.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {dest} ({len(doc['rows'])} rows)")
