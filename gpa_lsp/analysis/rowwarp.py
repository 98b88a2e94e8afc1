"""What a warp per row reaches: the share of a stream's rate at which the rewrite Global Memory
Coalescing proposes for a per-lane walk (a warp per row, one row per warp, 32 times the threads)
reads its rows, measured by ``benchmarks/coalescing/rowwarp_probe.cu`` (table: ``coalescing.json``,
``rowwarp``).

Why: the unit model bounds the coalesced code by what every memory unit's work allows at the highest
share of its peak a probe reached (DRAM 94%, the L2's resident rate). A stream reaches that; a warp
per row of short rows does not. Each warp moves only its row between its launch and its exit, and
what lies between (the loads' latency, the shuffle reduction, the store, the block's exit and the
next block's dispatch) costs about the same whatever the row's length. The probe read the same
bytes as a grid-stride float4 stream and as a warp per row of L floats, per launch of 20
back-to-back launches, on an H200 (2026-11-29):

========  ======  ======  ======  ======  ======
row (B)     128     256     512    1024  >= 2048
========  ======  ======  ======  ======  ======
DRAM       0.29    0.40    0.87    1.00    1.00
L2         0.28    0.43    0.75    0.99    1.00
========  ======  ======  ======  ======  ======

(stream over warp per row; floats or float4s per lane within 3% of each other at 512 B and up, so
the row's bytes, not its loads, are the variable). At 512 B per row (128 floats) a warp per row runs
DRAM at 0.87 of the stream's rate and the L2-resident read at 0.75; from 1 KB on, at the stream's.
A persistent grid (each warp taking row after row) did no better at 512 B (DRAM 0.89, L2 0.77).

Scope: the coalesced code's memory bound (``bound_unit`` DRAM, ``resident``, the L2's requests;
not the row-gather roof, whose probe read its rows by a warp per row already), for a per-lane walk
whose rows are long enough that a warp per row is the rewrite (``lanewalk.LONG_ROWS`` elements;
shorter rows are coalesced by storing them interleaved, the same threads, no per-row tail). The row's bytes are
what a warp fetches for it (``lanewalk.fetched_row_bytes``: the bytes a thread loads in its walk,
all its arrays, less a second walk of the same row, which hits the L1).

On another device: the probe ran on the H200 only; a device of the same chip (the H100) takes its
rows (``probe_tables.coalescing_rows``). The H100's DRAM is slower (3.35 against 4.8 TB/s), so the
same per-row tail costs it a smaller share of the time: on the H100 this bound is, if anything,
too tight at 512 B per row. docs/optimizers.md ("A warp per row of short rows does not stream").
"""

from __future__ import annotations

import math

from .curves import linear_flat
from .probe_tables import coalescing_rows

WHERE = ("dram", "l2")


def efficiency(device, row_bytes: float, where: str) -> float | None:
    """The share (0..1] of the stream's rate at which a warp per row of ``row_bytes`` reads from
    ``where`` ("dram" | "l2") on ``device`` (its rows of the probe, or its chip's), log2-linear
    between the probe's row lengths, flat beyond; None without the probe's rows."""
    rows = [r for r in coalescing_rows(device, "rowwarp") if r["where"] == where]
    stream = next((r["ms"] for r in rows if r["mode"] == "stream"), None)
    if not stream or row_bytes <= 0:
        return None
    best: dict[int, float] = {}
    for r in rows:
        if r["mode"] == "wpr":
            b = 4 * r["elements_per_row"]
            best[b] = min(best.get(b, math.inf), r["ms"])
    if not best:
        return None
    curve = [(math.log2(b), min(1.0, stream / ms)) for b, ms in sorted(best.items())]
    return linear_flat(curve, math.log2(row_bytes))
