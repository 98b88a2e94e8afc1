#!/usr/bin/env python3
"""Add what ``record_probe.sh fieldgather`` measured to ``gpa_lsp/data/coalescing.json`` (key
``fieldgather``).

    python benchmarks/coalescing/table_fieldgather.py RECORDED_DIR [--device TAG] [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds fieldgather_list.txt, fieldgather_times.txt, fieldgather_ncu.csv and
device.txt (with ``--device TAG``: fieldgather_TAG_*, another device's recording, probe_records.py);
the n-th launch of the CSV is the n-th line of the list. Per configuration (soaK: K
4-byte gathers of one index from K arrays; aos2 / aos4: one 8- / 16-byte gather from a record;
table in DRAM or L2): the timed median, the load requests and sectors per request, the L2 sectors
from L1, the DRAM bytes read and written, the units' shares of peak. Read by
``gpa_lsp/analysis/gathers.py`` and its tests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_records as pr
from gpa_lsp.profile.throughput import DURATION

ABOUT = (
    "'fieldgather': benchmarks/coalescing/fieldgather_probe.cu run by record_probe.sh fieldgather, "
    "converted by table_fieldgather.py. 2^22 threads read a random index (coalesced), gather K 4-byte "
    "fields of it and write a float: soaK = K arrays, K gathers; aos2/aos4 = one 8/16-byte gather from "
    "a record; foot dram = 2^24 records, l2 = 2^16.")


def rows(recorded: Path, device: str | None = None) -> tuple[str, list[dict]]:
    rec = pr.read(recorded, "fieldgather", first="mode", key=("mode", "foot"), device=device)
    out = []
    for c, (_, m) in zip(rec.configs, rec.launches):
        mode = c["mode"]
        out.append({
            "mode": mode, "fields": int(mode[3:]), "record": mode.startswith("aos"), "foot": c["foot"],
            "threads": 1 << 22,
            "median_ms": rec.median_ms(c), "duration_ns": m.get(DURATION),
            "requests": m.get(pr.LD_REQUESTS),
            "sectors_per_request": pr.per_request(m),
            "l2_sectors": m.get(pr.L2_SECTORS),
            "dram_read_bytes": m.get(pr.DRAM_READ), "dram_write_bytes": m.get(pr.DRAM_WRITE),
            **pr.unit_shares(m),
        })
    return rec.device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a = pr.arguments(ap).parse_args(argv)
    device, got = rows(a.recorded, a.device)
    pr.add_to_table(a.out, device, ("about_fieldgather", ABOUT), {"fieldgather": got})
    return 0


if __name__ == "__main__":
    sys.exit(main())
