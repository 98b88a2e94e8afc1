#!/usr/bin/env python3
"""The unroll probe's recorded runs as speedups over nvcc's own unrolling (the README's table).

    python3 benchmarks/unroll/table.py [benchmarks/unroll/recorded/h200.jsonl ...]

Each line: kernel, warps per SM, the default's time (ms) and, per pragma, default time / pragma
time (above 1: the pragma is faster). With several files, each run's figures side by side."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRAGMAS = ("1", "4", "8")


def speedups(path: Path) -> dict[tuple[str, int], tuple[float, dict[str, float]]]:
    """(kernel, warps per SM) -> (default ms, {pragma: default / pragma})."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ms = {(r["kernel"], r["unroll"], r["warps_per_sm"]): r["ms"] for r in rows}
    out = {}
    for (kernel, unroll, w), t in ms.items():
        if unroll == "default":
            out[(kernel, w)] = (t, {u: t / ms[(kernel, u, w)] for u in PRAGMAS if (kernel, u, w) in ms})
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((HERE / "recorded").glob("*.jsonl"))
    runs = [speedups(p) for p in paths]
    print("| kernel | warps/SM | default ms | " + " | ".join(f"`unroll {u}`" for u in PRAGMAS) + " |")
    print("|---|---:|---:|" + "---:|" * len(PRAGMAS))
    order = {"sum": 0, "dot": 1, "div": 2}
    for key in sorted(runs[0], key=lambda k: (order.get(k[0], 3), k[1])):
        t = " / ".join(f"{r[key][0]:.4f}" for r in runs)
        cells = [" / ".join(f"{r[key][1][u]:.2f}x" for r in runs) for u in PRAGMAS]
        print(f"| {key[0]} | {key[1]} | {t} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
