"""Unit throughput measured before, for kernels that did not change: the counters run off the
critical path.

Why: the counters run (counters.py) is most of a default ``gpa profile`` on a short harness
(1.65 s of 2.66 s on probe, H100: the process, CUPTI's profiler set-up and the replay passes of
each measured kernel's first launch), and what it measures is the same from one profile to the
next while the kernel's code and launch stay the same: the editor profiles on every save, and
most saves change another kernel, or none that is hot. So each measured launch is kept, in
``.gpa/throughput-cache.json`` beside the bundles, under a key of what its shares depend on:

- the device (its name),
- the kernel's code (``cubins.code_hash``: its own code, attributes and constant banks, the device
  functions and ``__constant__`` data of its cubin; not a sibling kernel's code, not line tables),
- the measured launch's configuration (grid, block, dynamic and static shared memory, registers),
- the harness (command, folder, environment, kernel filter: ``sample_volume.harness_key``): the same
  code on other data can run another mix,
- the metrics asked for (a change of ``counters.METRICS`` measures again).

A profile whose measured kernels all hit runs no counters run; the bundle's manifest says which
kernels' throughput came from here and when it was measured (``throughput.from_cache``). What this
cannot see: input files the harness reads that are not in its command or environment. ``[profile]
throughput_cache = false`` measures every time. Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Mapping, Sequence

from ..cubins import code_hash
from ..model import Kernel, Profile
from .json_store import read_entries, write_entries

FILE = "throughput-cache.json"
MAX_ENTRIES = 256


def kernel_key(profile: Profile, kernel: Kernel, cubins: Mapping[str, bytes], harness: str,
               metrics: Sequence[str]) -> str | None:
    """The cache key of ``kernel``'s first launch; None when its code or launch is not known (no
    cubin, no launch record): such a kernel is always measured."""
    data = cubins.get(kernel.cubin)
    if data is None or not kernel.launches:
        return None
    code = code_hash(data, kernel.name)
    if code is None:
        return None
    first = kernel.launches[0]
    doc = {"device": profile.device.name, "kernel": kernel.name, "code": code, "grid": list(first.grid),
           "block": list(first.block), "dynamic_shared": first.dynamic_shared, "static_shared": first.static_shared,
           "registers": first.registers, "harness": harness, "metrics": list(metrics)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def lookup(path: str | os.PathLike, key: str) -> tuple[dict[str, float], str] | None:
    """(metric -> value, when it was measured) of the entry under ``key``; None when there is none
    or it is damaged."""
    return lookup_many(path, [key]).get(key)


def lookup_many(path: str | os.PathLike, keys) -> dict[str, tuple[dict[str, float], str]]:
    """``lookup`` of each of ``keys`` with one read of the file: key -> its hit (misses left out)."""
    doc = read_entries(Path(path))
    hits = {}
    for key in keys:
        if (got := _entry(doc.get(key))) is not None:
            hits[key] = got
    return hits


def _entry(entry) -> tuple[dict[str, float], str] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("values"), dict):
        return None
    values: dict[str, float] = {}
    for metric, v in entry["values"].items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            return None
        values[str(metric)] = float(v)
    return (values, str(entry.get("measured_at", "?"))) if values else None


def remember(path: str | os.PathLike, measured: Mapping[str, Mapping[str, float]]) -> None:
    """Keep each measured launch (key -> metric -> value); best effort: a read-only project only
    measures again next time. The oldest entries go first beyond ``MAX_ENTRIES``."""
    if not measured:
        return
    p = Path(path)
    doc = read_entries(p)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for key, values in measured.items():
        doc.pop(key, None)
        doc[key] = {"values": {str(m): float(v) for m, v in values.items()}, "measured_at": stamp}
    write_entries(p, doc, MAX_ENTRIES)
