#!/usr/bin/env python3
"""Turn what record.sh measured into ``gpa_lsp/data/coalescing.json`` (the device's ``walk`` and
``divergence`` rows; the other devices' and the other probes' kept).

    python benchmarks/coalescing/table.py RECORDED_DIR [--device TAG] [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record.sh's list.txt, times.txt, ncu.csv and device.txt (with ``--device TAG``:
walk_TAG_*, another device's recording, e.g. ``recorded/walk_h200_*``). The ncu pass runs
every configuration once, in list order, so the n-th launch of ncu.csv is the n-th line of
list.txt. Per configuration the table keeps the timed median (no profiler), the sectors per
request ncu counted, and the share of its sustained peak that L1, L2 and DRAM reached; read by
``gpa_lsp/analysis/coalescing.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_records as pr
from gpa_lsp.profile.throughput import CLOCK, DRAM_BYTES, DURATION


def lines_per_request(config: str) -> int | None:
    """The 128-byte lines one warp request of a walk configuration touches (by construction, see
    coalesce_probe.cu): rowG: 32/G groups of G x 4 bytes, one line each; bcast: 1; stride8: 32."""
    if config.startswith("row"):
        g = int(config[3:].split("_")[0])
        return 32 // g if g < 32 else 1
    return {"bcast": 1, "stride8": 32}.get(config.split("_")[0])


def rows(recorded: Path, device: str | None = None) -> tuple[str, list[dict]]:
    rec = pr.read(recorded, None, first="config", key=("config", "foot", "warps_per_sm"), device=device)
    sms = next((m["launch__sm_count"] for _, m in rec.launches if m.get("launch__sm_count")), None)
    out = []
    for c, (_, m) in zip(rec.configs, rec.launches):
        store = c["store"] == "1"
        sec, req = (pr.ST_SECTORS, pr.ST_REQUESTS) if store else (pr.LD_SECTORS, pr.LD_REQUESTS)
        r = {
            "config": c["config"], "foot": c["foot"], "warps_per_sm": int(c["warps_per_sm"]), "store": store,
            "median_ms": rec.median_ms(c),
            "duration_ns": m.get(DURATION),
            "sectors_per_request": pr.per_request(m, sec, req),
            "lines_per_request": lines_per_request(c["config"]),
            "requests": m.get(req),
            "l2_sectors": m.get(pr.L2_SECTORS),
            "l1_hit_pct": m.get(pr.L1_HIT),
            "dram_bytes": sum(m.get(b, 0.0) for b in DRAM_BYTES),
            "clock_hz": m.get(CLOCK),
            "l1_wavefronts": m.get(pr.WAVEFRONTS),
            **pr.unit_shares(m),
        }
        if c["config"].startswith("div_"):
            r["active_lanes"] = int(c["sectors"])
            r["lanes_per_instruction"] = round(m[pr.THREAD_INST] / m[pr.INST], 2) if m.get(pr.INST) else None
        out.append(r)
    return rec.device, out, sms


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a = pr.arguments(ap).parse_args(argv)
    device, got, sms = rows(a.recorded, a.device)
    about = ("What warp requests of 1 to 32 sectors cost, per unit, on this device: "
             "benchmarks/coalescing/coalesce_probe.cu run by record.sh (timed medians, and one ncu pass "
             "at uncontrolled clocks), converted by table.py. 'walk' configurations: rowG = groups of G "
             "lanes walk their own rows (G=32 coalesced, G=1 32 sectors per request, every sector used "
             "again by later steps), bcast = 1 sector, stride8 = one element per sector (the excess "
             "reaches DRAM); foot = where the working set lives. 'divergence': A active lanes per warp "
             "walk a list with an index load and a gather per entry. Read by gpa_lsp/analysis/coalescing.py.")
    pr.add_to_table(a.out, device, ("about", about), {
        "sm_count": int(sms) if sms else None, "walk": [r for r in got if not r["config"].startswith("div_")],
        "divergence": [r for r in got if r["config"].startswith("div_")]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
