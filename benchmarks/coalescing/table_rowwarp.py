#!/usr/bin/env python3
"""Add what ``rowwarp_probe --time`` measured to ``gpa_lsp/data/coalescing.json`` (key ``rowwarp``).

    python benchmarks/coalescing/table_rowwarp.py RECORDED_DIR --device h200 [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds ``rowwarp_TAG_times.txt`` (one line per configuration: mode, ``L=``, ``vec=``,
``where=``, ``bytes=``, ``ms=`` per launch) and ``rowwarp_TAG_device.txt`` (nvidia-smi's name,
driver). A second run kept as ``rowwarp_TAG_times2.txt`` is not read: it is there to show that
the first repeats (within 2%). Each row: mode (``stream`` the roof, ``wpr`` a warp per row and one
row per warp, ``wprgs`` the same rows over a persistent grid), elements per row ``L``, floats per
lane load ``vec``, ``where`` the working set lives (``dram``: 256 MiB read once; ``l2``: 24 MiB the
L2 keeps between launches), bytes read, and ms per launch. Read by ``gpa_lsp/analysis/rowwarp.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_records as pr

ABOUT = ("about_rowwarp",
         "'rowwarp': benchmarks/coalescing/rowwarp_probe.cu --time, converted by table_rowwarp.py. The same "
         "bytes read by a grid-stride float4 stream (mode stream, L 0: the roof), by a warp per row of L "
         "floats with one row per warp and 32x the threads (wpr: lanes load floats or float4s striding over "
         "the row, shuffle sum, lane 0 stores) and by the same rows over a persistent grid (wprgs), from "
         "DRAM (256 MiB read once per launch) or from the L2 (24 MiB kept between launches); ms per launch "
         "of 20 back-to-back launches, median of 5 batches.")


def rows(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        f = pr.fields(line, "mode")
        out.append({"mode": f["mode"], "elements_per_row": int(f["L"]), "vec": int(f["vec"]),
                    "where": f["where"], "bytes": int(f["bytes"]), "ms": float(f["ms"])})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = pr.arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    a = ap.parse_args(argv)
    if not a.device:
        ap.error("the row-warp probe was recorded on the H200 only: --device h200")
    prefix = pr.file_prefix("rowwarp", a.device)
    device = (a.recorded / f"{prefix}device.txt").read_text().split(",")[0].strip()
    pr.add_to_table(a.out, device, ABOUT, {"rowwarp": rows(a.recorded / f"{prefix}times.txt")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
