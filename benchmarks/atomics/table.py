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
# same_counter.cu's output -> the device it ran on: what a float add costs against an unsigned one
SAME_COUNTER = {"same_counter_h200.jsonl": "NVIDIA H200"}


def op_costs(lines: list[dict]) -> dict:
    """{"f32": [{bins, u32_ms, f32_ms, u32_private_ms, f32_private_ms, global_factor, private_factor}]}
    from same_counter.cu's keyed sweep, and its one-counter patterns as they are ("one_counter")."""
    keyed: dict[int, dict] = {}
    for rec in lines:
        if rec["pattern"] in ("u32_keyed", "f32_keyed"):
            op = rec["pattern"].split("_")[0]
            row = keyed.setdefault(rec["bins"], {"bins": rec["bins"]})
            row[f"{op}_ms"], row[f"{op}_private_ms"] = rec["ms"], rec["private_ms"]
    rows = []
    for bins in sorted(keyed):
        r = keyed[bins]
        r["global_factor"] = round(r["f32_ms"] / r["u32_ms"], 4)
        r["private_factor"] = round(r["f32_private_ms"] / r["u32_private_ms"], 4)
        rows.append(r)
    one = {rec["pattern"]: rec["ns_per_atomic"] for rec in lines if "bins" not in rec}
    return {"f32": rows, "one_counter_ns": one}


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
        "op_costs_about": "benchmarks/atomics/same_counter.cu: a float atomicAdd against an unsigned one on "
                          "the same counters (keys hashed over bins, 2^24 adds), global and privatized in shared "
                          "memory (a float add there is a compare-and-swap loop); global_factor = f32_ms / u32_ms, "
                          "private_factor = f32_private_ms / u32_private_ms. Read by atomic_privatization.py.",
    }
    for f, device in SAME_COUNTER.items():
        path = here / f
        if path.exists():
            doc["devices"][device]["op_costs"] = op_costs(
                [json.loads(s) for s in path.read_text().splitlines() if s.strip()])
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
