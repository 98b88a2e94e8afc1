"""Turn record_batch.sh's output into benchmarks/restrict/batch_<device>.json: one row per (walk, warps
per SM) with the plain and restrict times (median of 5) and, from one ncu launch each, the units'
shares of peak, DRAM bytes and L2 sectors from L1.

    python3 benchmarks/restrict/table_batch.py RECORDED_DIR DEVICE      (e.g. recorded/batch_h200 h200)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gpa_lsp.profile.throughput import parse_raw_csv  # noqa: E402

NCU = {"us": "gpu__time_duration.sum", "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
       "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
       "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
       "dram_read_mb": "dram__bytes_read.sum", "l2_sectors_m": "lts__t_sectors_srcunit_tex.sum",
       "warps_per_scheduler": "smsp__warps_active.avg.per_cycle_active"}


def rows(folder: Path) -> list[dict]:
    configs = [line.split() for line in (folder / "batch_list.txt").read_text().splitlines() if line.strip()]
    times = {tuple(p[:3]): float(p[3].split("=")[1])
             for p in (line.split() for line in (folder / "batch_times.txt").read_text().splitlines()) if len(p) == 4}
    launches = parse_raw_csv((folder / "batch_ncu.csv").read_text(), wanted=set(NCU.values()))
    out: dict[tuple[str, int], dict] = {}
    for cfg, (_, r) in zip(configs, launches):
        walk, which, warps = cfg[0], cfg[1], int(cfg[2].split("=")[1])
        row = out.setdefault((walk, warps), {"walk": walk, "warps_per_sm": warps})
        got = {k: r[m] for k, m in NCU.items()}
        got["dram_read_mb"] /= 1e6
        got["l2_sectors_m"] /= 1e6
        got["us"] /= 1e3
        row[which] = {"median_ms": times[tuple(cfg)], **{k: round(v, 2) for k, v in got.items()}}
    for row in out.values():
        row["speedup"] = round(row["plain"]["median_ms"] / row["restrict"]["median_ms"], 3)
    return list(out.values())


if __name__ == "__main__":
    folder, device = Path(sys.argv[1]), sys.argv[2]
    dest = Path(__file__).with_name(f"batch_{device}.json")
    doc = {"device": (folder / "device.txt").read_text().strip(), "rows": rows(folder)}
    dest.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {dest} ({len(doc['rows'])} rows)")
