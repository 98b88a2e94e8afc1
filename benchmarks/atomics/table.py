#!/usr/bin/env python3
"""Turn the atomics microbenchmark's lines (benchmarks/atomics/*.jsonl, one file a device) into ``gpa_lsp/data/atomics.json``.

    python benchmarks/atomics/table.py [--out gpa_lsp/data/atomics.json]

Every recording of ``RECORDINGS`` (run.sh's output on one device, the name that device's profiles
record), in that order: the first device's rows are those a device of no probed chip takes
(analysis/probe_tables.py).

Per key pattern, per number of distinct counters (bins): the global-atomic loop's time and the
privatized loop's (shared-memory copy per block, one global flush per bin and block), and the
loop without atomics (the floor). Read by ``gpa_lsp/analysis/optimizers/atomic_privatization.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# run.sh's output (benchmarks/atomics/) -> the device it ran on, by the name its profiles record
RECORDINGS = {"h100.jsonl": "NVIDIA H100 80GB HBM3", "h200.jsonl": "NVIDIA H200"}


def table(lines: list[dict]) -> dict:
    """{"stream_ms": {key bytes: ms}, "patterns": {pattern: [rows by (key_bytes, bins)]}}."""
    out: dict = {"stream_ms": {}, "patterns": {}}
    for rec in lines:
        kb = rec.get("key_bytes", 4)
        if rec["kernel"] == "stream":
            prev = out["stream_ms"].get(str(kb))
            out["stream_ms"][str(kb)] = rec["ms"] if prev is None else min(prev, rec["ms"])
            continue
        level = out["patterns"].setdefault(rec["pattern"], {}).setdefault(
            (kb, rec["bins"]), {"key_bytes": kb, "bins": rec["bins"]})
        level[f"{rec['kernel']}_ms"] = rec["ms"]
    for pattern, levels in out["patterns"].items():
        rows = sorted(levels.values(), key=lambda r: (r["key_bytes"], r["bins"]))
        for r in rows:
            if "private_ms" in r:
                r["ratio"] = round(r["global_ms"] / r["private_ms"], 3)
        out["patterns"][pattern] = rows
    first = lines[0]
    out.update(n=first["n"], grid=first["grid"], block=first["block"])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "gpa_lsp/data/atomics.json"))
    args = ap.parse_args(argv)
    here = ROOT / "benchmarks" / "atomics"
    recorded = {device: [json.loads(s) for s in (here / f).read_text().splitlines() if s.strip()]
                for f, device in RECORDINGS.items()}
    doc = {
        "about": "Global atomicAdd throughput against the number of distinct counters, and the same loop "
                 "privatized in shared memory: benchmarks/atomics/atomics.cu (2^24 keys, grid-stride loop, "
                 "2048 x 256 threads, median of 20 launches), converted by benchmarks/atomics/table.py. "
                 "ratio = global_ms / private_ms. Patterns: random (each key uniform over the bins), warp "
                 "(the 32 lanes of a warp share one key); key_bytes: the width of the loaded key (4, and for "
                 "random 2 and 1: the loop's floor, stream_ms, falls with the bytes read per atomic). Read by analysis/optimizers/atomic_privatization.py.",
        "devices": {device: table(lines) for device, lines in recorded.items()},
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
