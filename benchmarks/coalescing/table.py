#!/usr/bin/env python3
"""Turn what record.sh measured into ``gpa_lsp/data/coalescing.json``.

    python benchmarks/coalescing/table.py RECORDED_DIR [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record.sh's list.txt, times.txt, ncu.csv and device.txt. The ncu pass runs
every configuration once, in list order, so the n-th launch of ncu.csv is the n-th line of
list.txt. Per configuration the table keeps the timed median (no profiler), the sectors per
request ncu counted, and the share of its sustained peak that L1, L2 and DRAM reached; read by
``gpa_lsp/analysis/coalescing.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.profile.throughput import CLOCK, DRAM_BYTES, DURATION, UNITS, parse_raw_csv  # noqa: E402

LD = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
ST = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
L2_SECTORS = "lts__t_sectors_srcunit_tex.sum"
L1_HIT = "l1tex__t_sector_hit_rate.pct"
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
THREAD_INST, INST = "smsp__thread_inst_executed.sum", "smsp__inst_executed.sum"


def lines_per_request(config: str) -> int | None:
    """The 128-byte lines one warp request of a walk configuration touches (by construction, see
    coalesce_probe.cu): rowG: 32/G groups of G x 4 bytes, one line each; bcast: 1; stride8: 32."""
    if config.startswith("row"):
        g = int(config[3:].split("_")[0])
        return 32 // g if g < 32 else 1
    return {"bcast": 1, "stride8": 32}.get(config.split("_")[0])


def _fields(line: str) -> dict[str, str]:
    name, *rest = line.split()
    out = {"config": name}
    for kv in rest:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def rows(recorded: Path) -> tuple[str, list[dict]]:
    configs = [_fields(l) for l in (recorded / "list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / "times.txt").read_text().splitlines():
        if l.strip():
            f = _fields(l)
            timed[(f["config"], f["foot"], f["warps_per_sm"])] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / "ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in ncu.csv for {len(configs)} configurations")
    device = (recorded / "device.txt").read_text().split(",")[0].strip()
    sms = next((m["launch__sm_count"] for _, m in launches if m.get("launch__sm_count")), None)
    out = []
    for c, (_, m) in zip(configs, launches):
        store = c["store"] == "1"
        sec, req = ST if store else LD
        r = {
            "config": c["config"], "foot": c["foot"], "warps_per_sm": int(c["warps_per_sm"]), "store": store,
            "median_ms": timed.get((c["config"], c["foot"], c["warps_per_sm"])),
            "duration_ns": m.get(DURATION),
            "sectors_per_request": round(m[sec] / m[req], 3) if m.get(req) else None,
            "lines_per_request": lines_per_request(c["config"]),
            "requests": m.get(req),
            "l2_sectors": m.get(L2_SECTORS),
            "l1_hit_pct": m.get(L1_HIT),
            "dram_bytes": sum(m.get(b, 0.0) for b in DRAM_BYTES),
            "clock_hz": m.get(CLOCK),
            "l1_wavefronts": m.get(WAVEFRONTS),
            **{f"{u}_pct": m.get(metric) for u, metric in UNITS.items()},
        }
        if c["config"].startswith("div_"):
            r["active_lanes"] = int(c["sectors"])
            r["lanes_per_instruction"] = round(m[THREAD_INST] / m[INST], 2) if m.get(INST) else None
        out.append(r)
    return device, out, sms


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recorded", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "gpa_lsp" / "data" / "coalescing.json")
    a = ap.parse_args(argv)
    device, got, sms = rows(a.recorded)
    doc = {
        "about": ("What warp requests of 1 to 32 sectors cost, per unit, on this device: "
                  "benchmarks/coalescing/coalesce_probe.cu run by record.sh (timed medians, and one ncu pass "
                  "at uncontrolled clocks), converted by table.py. 'walk' configurations: rowG = groups of G "
                  "lanes walk their own rows (G=32 coalesced, G=1 32 sectors per request, every sector used "
                  "again by later steps), bcast = 1 sector, stride8 = one element per sector (the excess "
                  "reaches DRAM); foot = where the working set lives. 'divergence': A active lanes per warp "
                  "walk a list with an index load and a gather per entry. Read by gpa_lsp/analysis/coalescing.py."),
        "devices": {device: {"sm_count": int(sms) if sms else None, "walk": [r for r in got if not r["config"].startswith("div_")],
                             "divergence": [r for r in got if r["config"].startswith("div_")]}},
    }
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{a.out}: {len(got)} configurations on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
