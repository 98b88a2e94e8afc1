#!/usr/bin/env python3
"""Add what record_probe.sh lanewalk (or lanewalk_spread) measured to ``gpa_lsp/data/coalescing.json``
(key ``lanewalk``, or ``lanewalk_spread``).

    python benchmarks/coalescing/table_lanewalk.py RECORDED_DIR [--name lanewalk_spread] [--device TAG] [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record_probe.sh's NAME_list.txt, NAME_times.txt, NAME_ncu.csv and device.txt
(with ``--device TAG``: NAME_TAG_*, another device's recording, probe_records.py); the n-th launch of the CSV is the n-th line of the list. ``lanewalk_spread`` rows (lengths uniform in
[1, 2L - 1], lanewalk_spread_probe.cu) also carry ``lanes_active``: the mean share of a warp's lanes
whose rows are still running at each step of the scalar walk (rows / 32 x the warp's longest row,
over the warps of the probe's own row lengths, drawn here as the probe draws them). Per configuration (mode
scalar / ell / vector, elements per row L, gather, warps per SM): the timed median, the load
sectors per request, the L1 hit rate, the L2 sectors the L1 asked for, the DRAM bytes read and
written, and the units' shares of peak. Read by ``gpa_lsp/analysis/coalescing.py`` and its tests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_records as pr
from gpa_lsp.profile.throughput import CLOCK, DURATION

ABOUT = {
    "lanewalk": (
        "'lanewalk': benchmarks/coalescing/lanewalk_probe.cu run by record_probe.sh lanewalk, converted by "
        "table_lanewalk.py. 2^25 elements in rows of L (val float, col int); mode scalar = a thread per "
        "row walks it (the uncoalesced per-lane walk), ell = the same threads on the rows stored "
        "column-major (coalesced, nothing else changed), vector = a warp per row (CSR vector); "
        "gather adds x[col[j]] (x 4 MiB); 8-64 warps per SM in a grid-stride loop."),
    "lanewalk_spread": (
        "'lanewalk_spread': benchmarks/coalescing/lanewalk_spread_probe.cu run by record_probe.sh "
        "lanewalk_spread, converted by table_lanewalk.py --name lanewalk_spread. The walks of 'lanewalk' "
        "over rows of lengths uniform in [1, 2L - 1] (mean L): ell stores them column-major padded to "
        "the longest row; lanes_active = mean row / 32 x a warp's longest row (the scalar walk's active "
        "lanes); 32 and 64 warps per SM."),
}


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


def rows(recorded: Path, name: str = "lanewalk", device: str | None = None) -> tuple[str, list[dict]]:
    rec = pr.read(recorded, name, first="mode", key=("mode", "L", "gather", "warps_per_sm"), device=device)
    nnz = 1 << 25    # NNZ of lanewalk_probe.cu
    active = ({L: spread_lanes_active(L, nnz // L) for L in {int(c["L"]) for c in rec.configs}}
              if name == "lanewalk_spread" else {})
    out = []
    for c, (_, m) in zip(rec.configs, rec.launches):
        out.append({
            "mode": c["mode"], "elements_per_row": int(c["L"]), "gather": c["gather"] == "1",
            "warps_per_sm": int(c["warps_per_sm"]),
            "median_ms": rec.median_ms(c),
            "duration_ns": m.get(DURATION),
            "requests": m.get(pr.LD_REQUESTS),
            "sectors_per_request": pr.per_request(m),
            "l1_hit_pct": m.get(pr.L1_HIT),
            "l2_sectors": m.get(pr.L2_SECTORS),
            "dram_read_bytes": m.get(pr.DRAM_READ),
            "dram_write_bytes": m.get(pr.DRAM_WRITE),
            "clock_hz": m.get(CLOCK),
            "warps_active_pct": m.get(pr.WARPS_ACTIVE),
            **pr.unit_shares(m),
            **({"lanes_active": round(active[int(c["L"])], 4)} if active else {}),
        })
    return rec.device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="lanewalk", choices=("lanewalk", "lanewalk_spread"))
    a = pr.arguments(ap).parse_args(argv)
    device, got = rows(a.recorded, a.name, a.device)
    pr.add_to_table(a.out, device, (f"about_{a.name}", ABOUT[a.name]), {a.name: got})
    return 0


if __name__ == "__main__":
    sys.exit(main())
