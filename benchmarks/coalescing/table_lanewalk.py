#!/usr/bin/env python3
"""Add what record_probe.sh lanewalk measured to ``gpa_lsp/data/coalescing.json`` (key ``lanewalk``).

    python benchmarks/coalescing/table_lanewalk.py RECORDED_DIR [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record_probe.sh lanewalk's lanewalk_list.txt, lanewalk_times.txt, lanewalk_ncu.csv
and device.txt; the n-th launch of the CSV is the n-th line of the list. Per configuration (mode
scalar / ell / vector, elements per row L, gather, warps per SM): the timed median, the load
sectors per request, the L1 hit rate, the L2 sectors the L1 asked for, the DRAM bytes read and
written, and the units' shares of peak. Read by ``gpa_lsp/analysis/coalescing.py`` and its tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.profile.throughput import CLOCK, DURATION, UNITS, parse_raw_csv  # noqa: E402

SECTORS, REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
L2_SECTORS, L1_HIT = "lts__t_sectors_srcunit_tex.sum", "l1tex__t_sector_hit_rate.pct"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"


def _fields(line: str) -> dict[str, str]:
    name, *rest = line.split()
    out = {"mode": name}
    for kv in rest:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def rows(recorded: Path) -> tuple[str, list[dict]]:
    configs = [_fields(l) for l in (recorded / "lanewalk_list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / "lanewalk_times.txt").read_text().splitlines():
        if l.strip():
            f = _fields(l)
            timed[(f["mode"], f["L"], f["gather"], f["warps_per_sm"])] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / "lanewalk_ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in lanewalk_ncu.csv for {len(configs)} configurations")
    device = (recorded / "device.txt").read_text().split(",")[0].strip()
    out = []
    for c, (_, m) in zip(configs, launches):
        out.append({
            "mode": c["mode"], "elements_per_row": int(c["L"]), "gather": c["gather"] == "1",
            "warps_per_sm": int(c["warps_per_sm"]),
            "median_ms": timed.get((c["mode"], c["L"], c["gather"], c["warps_per_sm"])),
            "duration_ns": m.get(DURATION),
            "requests": m.get(REQUESTS),
            "sectors_per_request": round(m[SECTORS] / m[REQUESTS], 3) if m.get(REQUESTS) else None,
            "l1_hit_pct": m.get(L1_HIT),
            "l2_sectors": m.get(L2_SECTORS),
            "dram_read_bytes": m.get("dram__bytes_read.sum"),
            "dram_write_bytes": m.get("dram__bytes_write.sum"),
            "clock_hz": m.get(CLOCK),
            "warps_active_pct": m.get(WARPS_ACTIVE),
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
    doc["about_lanewalk"] = (
        "'lanewalk': benchmarks/coalescing/lanewalk_probe.cu run by record_probe.sh lanewalk, converted by "
        "table_lanewalk.py. 2^25 elements in rows of L (val float, col int); mode scalar = a thread per "
        "row walks it (the uncoalesced per-lane walk), ell = the same threads on the rows stored "
        "column-major (coalesced, nothing else changed), vector = a warp per row (CSR vector); "
        "gather adds x[col[j]] (x 4 MiB); 8-64 warps per SM in a grid-stride loop.")
    doc["devices"].setdefault(device, {})["lanewalk"] = got
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{a.out}: {len(got)} lanewalk configurations on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
