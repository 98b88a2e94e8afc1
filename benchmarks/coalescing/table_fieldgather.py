#!/usr/bin/env python3
"""Add what ``record_probe.sh fieldgather`` measured to ``gpa_lsp/data/coalescing.json`` (key
``fieldgather``).

    python benchmarks/coalescing/table_fieldgather.py RECORDED_DIR [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds fieldgather_list.txt, fieldgather_times.txt, fieldgather_ncu.csv and
device.txt; the n-th launch of the CSV is the n-th line of the list. Per configuration (soaK: K
4-byte gathers of one index from K arrays; aos2 / aos4: one 8- / 16-byte gather from a record;
table in DRAM or L2): the timed median, the load requests and sectors per request, the L2 sectors
from L1, the DRAM bytes read and written, the units' shares of peak. Read by
``gpa_lsp/analysis/gathers.py`` and its tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.profile.throughput import DURATION, UNITS, parse_raw_csv  # noqa: E402

SECTORS, REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"


def rows(recorded: Path) -> tuple[str, list[dict]]:
    configs = [l.split() for l in (recorded / "fieldgather_list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / "fieldgather_times.txt").read_text().splitlines():
        if l.strip():
            mode, foot, ms = l.split()
            timed[(mode, foot)] = float(ms.partition("=")[2])
    launches = parse_raw_csv((recorded / "fieldgather_ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in fieldgather_ncu.csv for {len(configs)} configurations")
    device = (recorded / "device.txt").read_text().split(",")[0].strip()
    out = []
    for (mode, foot), (_, m) in zip(configs, launches):
        out.append({
            "mode": mode, "fields": int(mode[3:]), "record": mode.startswith("aos"), "foot": foot.partition("=")[2],
            "threads": 1 << 22,
            "median_ms": timed.get((mode, foot)), "duration_ns": m.get(DURATION),
            "requests": m.get(REQUESTS),
            "sectors_per_request": round(m[SECTORS] / m[REQUESTS], 3) if m.get(REQUESTS) else None,
            "l2_sectors": m.get("lts__t_sectors_srcunit_tex.sum"),
            "dram_read_bytes": m.get("dram__bytes_read.sum"), "dram_write_bytes": m.get("dram__bytes_write.sum"),
            **{f"{u}_pct": m.get(metric) for u, metric in UNITS.items()},
        })
    return device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recorded", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "gpa_lsp" / "data" / "coalescing.json")
    a = ap.parse_args(argv)
    device, got = rows(a.recorded)
    doc = json.loads(a.out.read_text())
    doc["about_fieldgather"] = (
        "'fieldgather': benchmarks/coalescing/fieldgather_probe.cu run by record_probe.sh fieldgather, "
        "converted by table_fieldgather.py. 2^22 threads read a random index (coalesced), gather K 4-byte "
        "fields of it and write a float: soaK = K arrays, K gathers; aos2/aos4 = one 8/16-byte gather from "
        "a record; foot dram = 2^24 records, l2 = 2^16.")
    doc["devices"].setdefault(device, {})["fieldgather"] = got
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{a.out}: {len(got)} fieldgather configurations on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
