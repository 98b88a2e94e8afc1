"""CUPTI's hardware sample buffer, sized from the samples the same harness brought last time.

Why: CUPTI allocates the buffer on the device when sampling is enabled, and its default (512 MB)
costs the sampling run about 0.2 s against 64 MB on the H100 (probe 1.24 -> 1.02 s,
restrict_fir 1.69 -> 1.36 s, ``gpa profile --no-throughput``). A smaller buffer loses nothing
where the harness's samples fit it, but fills on a long harness (long_1s kept 6.2 M of 46.1 M
samples under 512 MB), and which one a harness is cannot be told before it runs
(benchmarks/profiling/README.md, hw_buffer.h100.json). The workspace knows it after the first
run: this file keeps, per harness (command, folder, environment, kernel filter), the samples of
its last sampling run, in ``.gpa/sample-volume.json`` beside the bundles.

Rule: a buffer that holds the whole previous run's samples at ``BYTES_PER_SAMPLE`` each (scaled
by the sampling period; CUPTI's decoding threads empty it while the harness runs, so the samples
it must hold at once are fewer), rounded up to a power of two, at least ``MIN_BYTES`` (below it
nothing measurable is gained) and never above the size the
period would get without a cache (``collect.hw_buffer_bytes``). The check is CUPTI's
hardware-buffer-full flag: a run that filled a buffer sized here is run again at the period's
size (the collector says so in its notes), and the entry keeps the flag so the next run does not
shrink it again. Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from .json_store import read_entries, write_entries

# CUPTI's decoding threads empty the buffer while the harness runs: an H200 held probe's 410 K
# samples in 8 MB (20 B a sample, no buffer full in 3 runs at 8 to 128 MB; hw_buffer.h200.json),
# the H100 its 553 K in 64 MB (the smallest size tried there). 64 B a sample (3x the 20 B) gives
# probe 64 MB on both, where 128 B gave the H100 128 MB: 0.04-0.05 s more of the sampled
# process's start and end (harness 0.628 vs 0.591 s on the H100, 0.718 vs 0.664 s on the H200;
# benchmarks/profiling/README.md). Below 64 MB nothing measurable was gained (MIN_BYTES)
BYTES_PER_SAMPLE = 64
MIN_BYTES = 64 << 20
MAX_ENTRIES = 32
FILE = "sample-volume.json"


def harness_key(command: Sequence[str] | str, cwd: str | os.PathLike, env: Mapping[str, str],
                kernels: Sequence[str]) -> str:
    """What makes two runs the same harness: its command, folder, environment and kernel filter."""
    doc = {"command": command if isinstance(command, str) else [str(a) for a in command], "cwd": str(cwd),
           "env": {str(k): str(v) for k, v in sorted(env.items())}, "kernels": list(kernels)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


def previous(path: str | os.PathLike, key: str) -> dict | None:
    """The entry of the last run of this harness: {period, samples, hw_bytes, full, filled_at}; None
    if none. ``filled_at``: the largest buffer sized here that filled on this harness (0: none)."""
    entry = read_entries(Path(path)).get(key)
    if not isinstance(entry, dict):
        return None
    try:
        return {"period": int(entry["period"]), "samples": int(entry["samples"]),
                "hw_bytes": int(entry["hw_bytes"]), "full": bool(entry["full"]),
                "filled_at": int(entry.get("filled_at", 0))}
    except (KeyError, TypeError, ValueError):
        return None


def remember(path: str | os.PathLike, key: str, *, period: int, samples: int, hw_bytes: int, full: bool,
             filled_at: int = 0) -> None:
    """Keep this run's figures (best effort: a read-only project only loses the saving);
    ``filled_at``: a buffer sized here that filled in this run, kept with the earlier ones' largest
    so that the harness is not given it again (and run twice every time)."""
    p = Path(path)
    doc = read_entries(p)
    old = doc.pop(key, None)
    if isinstance(old, dict) and isinstance(old.get("filled_at"), int):
        filled_at = max(filled_at, old["filled_at"])
    doc[key] = {"period": period, "samples": samples, "hw_bytes": hw_bytes, "full": bool(full),
                "filled_at": filled_at}
    write_entries(p, doc, MAX_ENTRIES)


def sized(entry: dict | None, period: int, default: int) -> int | None:
    """The buffer for a run at 2^``period`` from the previous run's ``entry``, when smaller than
    ``default``; None when there is no usable entry (first run, or it filled its buffer: the
    period's default then, so the next full flag is real news)."""
    if entry is None or entry["full"] or entry["samples"] <= 0:
        return None
    expected = entry["samples"] * 2.0 ** (entry["period"] - period)   # samples scale with 1 / period
    need = max(MIN_BYTES, int(expected * BYTES_PER_SAMPLE))
    size = 1 << (need - 1).bit_length()
    if size <= entry.get("filled_at", 0):
        size = entry["filled_at"] * 2
    return size if size < default else None
