#!/usr/bin/env python3
"""Add what record_probe.sh loopfree / overlap / tile / rowgather / misalign / copywalk measured to ``gpa_lsp/data/coalescing.json``.

    python benchmarks/coalescing/table_probe.py loopfree|overlap|tile|rowgather|misalign|copywalk RECORDED_DIR [--device TAG] [--out gpa_lsp/data/coalescing.json]

RECORDED_DIR holds record_probe.sh's NAME_list.txt, NAME_times.txt, NAME_ncu.csv and device.txt (with
``--device TAG``: NAME_TAG_*, another device's recording, probe_records.py); the n-th launch of the CSV is the n-th line of the list. Per configuration (its name and warps per SM):
the timed median, the ncu duration and clock, the units' shares of peak, the DRAM bytes read and
written, the load requests and sectors, the L1 wavefronts, the instructions executed and the warps
active. Read by ``gpa_lsp/analysis/coalescing.py`` and its tests (key ``loopfree`` / ``overlap`` / ``tile`` / ``rowgather`` / ``misalign`` / ``copywalk``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_records as pr
from gpa_lsp.profile.throughput import CLOCK, DURATION

METRICS = {
    "requests": pr.LD_REQUESTS,
    "sectors": pr.LD_SECTORS,
    "l1_wavefronts": pr.WAVEFRONTS,
    "instructions": pr.INST,
    "warps_active_pct": pr.WARPS_ACTIVE,
    "dram_read_bytes": pr.DRAM_READ,
    "dram_write_bytes": pr.DRAM_WRITE,
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
    "tile": (
        "'tile': benchmarks/coalescing/tile_probe.cu run by record_probe.sh tile, converted by table_probe.py. "
        "lf_bB_mM: a loop-free kernel in blocks of B threads, each of 2^25 threads loads M floats from M DRAM "
        "arrays (coalesced) and stores one; tile_bB_mM: the same through a padded shared-memory tile with a "
        "block barrier between the loads and the store. B = 256 at 8-64 warps per SM, B = 1024 at 32 and 64."),
    "rowgather": (
        "'rowgather': benchmarks/coalescing/rowgather_probe.cu run by record_probe.sh rowgather, converted by "
        "table_probe.py. gather_rR: each output sums 16 rows of R bytes picked at random from a 1 GiB table, a "
        "warp per output (half a warp for R = 64), the output row stored coalesced; 16-64 warps per SM."),
    "misalign": (
        "'misalign': benchmarks/coalescing/misalign_probe.cu run by record_probe.sh misalign, converted by "
        "table_probe.py. Loop-free kernels over 2^26 floats in blocks of 256: copy_a0 aligned copy, copy_a1 "
        "the load one float off, copy_s1 the store one float off; s3 / t9 3- and 9-point 1D stencils (taps "
        "misaligned) and s3_tile / t9_tile the same through an aligned shared tile; h5 a 2D 5-point stencil "
        "on 8192 x 8192 in 32 x 8 blocks and h5_tile the same through a (8 + 2) x (32 + 2) tile; 16-64 warps "
        "per SM."),
    "copywalk": (
        "'copywalk': benchmarks/coalescing/copywalk_probe.cu run by record_probe.sh copywalk, converted by "
        "table_probe.py. walk_gG: 2^19 rows of 64 floats picked at random from a 256 MiB table copied out, G "
        "consecutive lanes per row striding over it (G = 1: a thread per row, G = 32: a warp per row), a load "
        "and a store per step through plain pointers; 8-64 warps per SM."),
}


def rows(name: str, recorded: Path, device: str | None = None) -> tuple[str, list[dict]]:
    rec = pr.read(recorded, name, first="config", key=("config", "warps_per_sm"), device=device)
    out = []
    for c, (_, m) in zip(rec.configs, rec.launches):
        out.append({
            "config": c["config"], "warps_per_sm": int(c["warps_per_sm"]),
            "median_ms": rec.median_ms(c),
            **{k: m.get(metric) for k, metric in METRICS.items()},
            **pr.unit_shares(m),
        })
    return rec.device, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(ABOUT))
    a = pr.arguments(ap).parse_args(argv)
    device, got = rows(a.name, a.recorded, a.device)
    pr.add_to_table(a.out, device, (f"about_{a.name}", ABOUT[a.name]), {a.name: got})
    return 0


if __name__ == "__main__":
    sys.exit(main())
