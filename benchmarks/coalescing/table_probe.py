#!/usr/bin/env python3
"""Add what record_probe.sh loopfree / overlap measured to ``gpa_lsp/data/coalescing.json``.

    python benchmarks/coalescing/table_probe.py loopfree|overlap RECORDED_DIR [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record_probe.sh's NAME_list.txt, NAME_times.txt, NAME_ncu.csv and device.txt; the
n-th launch of the CSV is the n-th line of the list. Per configuration (its name and warps per SM):
the timed median, the ncu duration and clock, the units' shares of peak, the DRAM bytes read and
written, the load requests and sectors, the L1 wavefronts, the instructions executed and the warps
active. Read by ``gpa_lsp/analysis/coalescing.py`` and its tests (key ``loopfree`` / ``overlap``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.profile.throughput import CLOCK, DURATION, UNITS, parse_raw_csv  # noqa: E402

METRICS = {
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1_wavefronts": "l1tex__data_pipe_lsu_wavefronts.sum",
    "instructions": "smsp__inst_executed.sum",
    "warps_active_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "clock_hz": CLOCK,
    "duration_ns": DURATION,
}
ABOUT = {
    "loopfree": (
        "'loopfree': benchmarks/coalescing/loopfree_probe.cu run by record_probe.sh loopfree, converted by "
        "table_probe.py. lf_mM: a loop-free kernel, each of 2^25 threads loads M floats from M DRAM arrays "
        "(coalesced) and stores one; lfhit_mM: the same plus 4 L1-hit loads; loop_mM: the same loads and "
        "store per element in a grid-stride loop. 8-64 warps per SM (resident blocks set by unused "
        "shared memory)."),
    "overlap": (
        "'overlap': benchmarks/coalescing/overlap_probe.cu run by record_probe.sh overlap, converted by "
        "table_probe.py. mix_lL_aA: per iteration 8 loads from an L1-resident tile touching L lines each "
        "(0: no loads), each into an FFMA chain, and A independent FFMAs; 16 and 64 warps per SM."),
}


def _fields(line: str) -> dict[str, str]:
    name, *rest = line.split()
    out = {"config": name}
    for kv in rest:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def rows(name: str, recorded: Path) -> tuple[str, list[dict]]:
    configs = [_fields(l) for l in (recorded / f"{name}_list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / f"{name}_times.txt").read_text().splitlines():
        if l.strip():
            f = _fields(l)
            timed[(f["config"], f["warps_per_sm"])] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / f"{name}_ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in {name}_ncu.csv for {len(configs)} configurations")
    device = (recorded / "device.txt").read_text().split(",")[0].strip()
    out = []
    for c, (_, m) in zip(configs, launches):
        out.append({
            "config": c["config"], "warps_per_sm": int(c["warps_per_sm"]),
            "median_ms": timed.get((c["config"], c["warps_per_sm"])),
            **{k: m.get(metric) for k, metric in METRICS.items()},
            **{f"{u}_pct": m.get(metric) for u, metric in UNITS.items()},
        })
    return device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(ABOUT))
    ap.add_argument("recorded", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "gpa_lsp" / "data" / "coalescing.json")
    a = ap.parse_args(argv)
    device, got = rows(a.name, a.recorded)
    doc = json.loads(a.out.read_text())
    doc[f"about_{a.name}"] = ABOUT[a.name]
    doc["devices"].setdefault(device, {})[a.name] = got
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{a.out}: {len(got)} {a.name} configurations on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
