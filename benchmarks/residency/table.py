#!/usr/bin/env python3
"""Turn what benchmarks/residency/record.sh recorded on a device into its rows of
``gpa_lsp/data/residency.json``.

    python benchmarks/residency/table.py benchmarks/residency/recorded/h200 [--out gpa_lsp/data/residency.json]

PREFIX names the recording: PREFIX_residency.jsonl (the timed modes, the device's properties),
PREFIX_single_list.jsonl and PREFIX_single_ncu.csv (ncu, caches not flushed: each one-pass launch's
own duration, six per footprint, the L2 holding what the previous launch read).

Per footprint F the duration of a launch that reads F again (the median of the last three) lies
between two lines fitted to the same durations: the resident line ``ramp + F / l2_rate`` (footprints
from a quarter to half the L2, which the L2 keeps whole) and the DRAM line ``dram_ramp + F /
dram_rate`` (footprints of twice the L2 and more, of which it keeps nothing). ``resident`` is where
the measured duration sits between them: the share of the reads the L2 served (1 up to half the
L2; never rising with F). The ramp is the launch's fixed cost beside its bytes (first wave in, last
out). benchmarks/residency/README.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20
ABOUT = ("The share of a kernel's reads the L2 serves when the kernel is launched again over the same data, by "
         "footprint, and what reading them costs: benchmarks/residency/residency_probe.cu --single under ncu (caches "
         "not flushed), converted by benchmarks/residency/table.py. Durations of one-pass launches fitted by "
         "ramp_ns + bytes / l2_bytes_per_s (footprints of a quarter to half the L2) and dram_ramp_ns + bytes / "
         "dram_bytes_per_s (twice the L2 and more); resident: where each footprint's duration sits between the "
         "two. Read by gpa_lsp/analysis/residency.py.")


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of (x, y) points."""
    slope, intercept = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return intercept, slope


def single_durations(prefix: Path) -> dict[int, float]:
    """Footprint (bytes) -> median duration (ns) of its last three one-pass launches."""
    sizes = [json.loads(s)["footprint_mb"] * MB for s in Path(f"{prefix}_single_list.jsonl").read_text().splitlines()
             if s.strip()]
    lines = [s for s in Path(f"{prefix}_single_ncu.csv").read_text().splitlines() if not s.startswith(("==", "{"))]
    rows = list(csv.reader(lines))
    head, body = rows[0], rows[2:]
    dur, name = head.index("gpu__time_duration.sum"), head.index("Kernel Name")
    d = [float(r[dur].replace(",", "")) for r in body if r[name].startswith("stream_read")]
    per = len(d) // len(sizes)
    return {f: statistics.median(d[i * per:(i + 1) * per][per // 2:]) for i, f in enumerate(sizes)}


def device_rows(prefix: Path) -> tuple[str, dict]:
    lines = [json.loads(s) for s in Path(f"{prefix}_residency.jsonl").read_text().splitlines() if s.strip()]
    props = next(x for x in lines if "device" in x)
    l2 = props["l2_bytes"]
    t = single_durations(prefix)
    ramp, per_byte = fit([(f, ns) for f, ns in t.items() if l2 / 4 <= f <= l2 / 2])
    dram_ramp, dram_per_byte = fit([(f, ns) for f, ns in t.items() if f >= 2 * l2])
    curve, top = [], 1.0
    for f, ns in sorted(t.items()):
        res, dram = ramp + f * per_byte, dram_ramp + f * dram_per_byte
        h = 1.0 if f <= l2 / 2 or dram <= res else (dram - ns) / (dram - res)
        top = min(top, max(0.0, min(1.0, h)))
        curve.append([f, round(top, 4)])
    entry = {"l2_bytes": l2, "ramp_ns": round(ramp, 1), "l2_bytes_per_s": round(1e9 / per_byte),
             "dram_ramp_ns": round(dram_ramp, 1), "dram_bytes_per_s": round(1e9 / dram_per_byte),
             "single_ns": [[f, ns] for f, ns in sorted(t.items())], "resident": curve}
    return props["device"], entry


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", type=Path)
    ap.add_argument("--out", default=str(ROOT / "gpa_lsp/data/residency.json"))
    args = ap.parse_args(argv)
    name, entry = device_rows(args.prefix)
    out = Path(args.out)
    table = json.loads(out.read_text()) if out.exists() else {}
    table = {"about": ABOUT, "devices": {**table.get("devices", {}), name: entry}}
    out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{name}: L2 {entry['l2_bytes'] / MB:.0f} MB; resident {entry['l2_bytes_per_s'] / 1e12:.2f} TB/s + "
          f"{entry['ramp_ns'] / 1e3:.2f} us; DRAM {entry['dram_bytes_per_s'] / 1e12:.2f} TB/s + "
          f"{entry['dram_ramp_ns'] / 1e3:.2f} us")
    for (f, h), (_, ns) in zip(entry["resident"], entry["single_ns"]):
        print(f"  {f / MB:4.0f} MB  {ns / 1e3:7.2f} us  resident {h:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
