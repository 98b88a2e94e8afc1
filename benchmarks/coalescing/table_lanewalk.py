#!/usr/bin/env python3
"""Add what record_probe.sh lanewalk (or lanewalk_spread) measured to ``gpa_lsp/data/coalescing.json``
(key ``lanewalk``, or ``lanewalk_spread``).

    python benchmarks/coalescing/table_lanewalk.py RECORDED_DIR [--name lanewalk_spread] [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record_probe.sh's NAME_list.txt, NAME_times.txt, NAME_ncu.csv and device.txt;
the n-th launch of the CSV is the n-th line of the list. ``lanewalk_spread`` rows (lengths uniform in
[1, 2L - 1], lanewalk_spread_probe.cu) also carry ``lanes_active``: the mean share of a warp's lanes
whose rows are still running at each step of the scalar walk (rows / 32 x the warp's longest row,
over the warps of the probe's own row lengths, drawn here as the probe draws them). Per configuration (mode
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


def _mix(v: int) -> int:
    """lanewalk_spread_probe.cu's host_mix()."""
    m = 0xFFFFFFFF
    v ^= v >> 16
    v = (v * 0x7FEB352D) & m
    v ^= v >> 15
    v = (v * 0x846CA68B) & m
    v ^= v >> 16
    return v


def spread_lanes_active(L: int, rows: int) -> float:
    """Mean elements per row over 32 x the mean longest row of a warp's 32 rows (the probe's lengths)."""
    n = [1 + _mix((r * 2654435761) & 0xFFFFFFFF) % (2 * L - 1) for r in range(rows)]
    longest = [max(n[w:w + 32]) for w in range(0, rows, 32)]
    return (sum(n) / rows) / (sum(longest) / len(longest))


def rows(recorded: Path, name: str = "lanewalk") -> tuple[str, list[dict]]:
    configs = [_fields(l) for l in (recorded / f"{name}_list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / f"{name}_times.txt").read_text().splitlines():
        if l.strip():
            f = _fields(l)
            timed[(f["mode"], f["L"], f["gather"], f["warps_per_sm"])] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / f"{name}_ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in {name}_ncu.csv for {len(configs)} configurations")
    nnz = 1 << 25    # NNZ of lanewalk_probe.cu
    active = {L: spread_lanes_active(L, nnz // L) for L in {int(c["L"]) for c in configs}} if name == "lanewalk_spread" else {}
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
            **({"lanes_active": round(active[int(c["L"])], 4)} if active else {}),
        })
    return device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recorded", type=Path)
    ap.add_argument("--name", default="lanewalk", choices=("lanewalk", "lanewalk_spread"))
    ap.add_argument("--out", type=Path, default=ROOT / "gpa_lsp" / "data" / "coalescing.json")
    a = ap.parse_args(argv)
    device, got = rows(a.recorded, a.name)
    doc = json.loads(a.out.read_text())
    if a.name == "lanewalk_spread":
        doc["about_lanewalk_spread"] = (
            "'lanewalk_spread': benchmarks/coalescing/lanewalk_spread_probe.cu run by record_probe.sh "
            "lanewalk_spread, converted by table_lanewalk.py --name lanewalk_spread. The walks of 'lanewalk' "
            "over rows of lengths uniform in [1, 2L - 1] (mean L): ell stores them column-major padded to "
            "the longest row; lanes_active = mean row / 32 x a warp's longest row (the scalar walk's active "
            "lanes); 32 and 64 warps per SM.")
        doc["devices"].setdefault(device, {})["lanewalk_spread"] = got
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{a.out}: {len(got)} lanewalk_spread configurations on {device}")
        return 0
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
