"""Turn record_mlp.sh's output into gpa_lsp/data/memory_parallelism.json.

    python3 scripts/gpu/mlp_table.py DIR [DIR ...] > gpa_lsp/data/memory_parallelism.json

Each DIR (one per device) holds mlp_list.txt, mlp_ncu.csv (or .csv.gz) and mlp_device.txt; the
recordings the shipped table came from are in scripts/gpu/mlp_recorded/<device>/. Every configuration
launches twice (a warm-up, then the measured launch): the second of each pair is
kept. Output: per device name, per pattern ("read": loads summed, "copy": loads
stored), the (bytes in flight per SM, DRAM share of peak %) points sorted by
bytes, with the launch's duration and DRAM bytes for the record.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gpa_lsp.profile.throughput import DRAM_BYTES, DURATION, UNITS, parse_raw_csv  # noqa: E402


def table(d: Path) -> dict:
    configs = []
    for line in (d / "mlp_list.txt").read_text().splitlines():
        name, *fields = line.split()
        kv = dict(f.split("=") for f in fields)
        configs.append((name, int(kv["warps_per_sm"]), int(kv["inflight_bytes_per_sm"]), kv["copy"] == "1"))
    raw = d / "mlp_ncu.csv"
    text = raw.read_text() if raw.exists() else gzip.decompress((d / "mlp_ncu.csv.gz").read_bytes()).decode()
    rows = [vals for _, vals in parse_raw_csv(text)]
    if len(rows) != 2 * len(configs):
        raise SystemExit(f"{len(rows)} launches for {len(configs)} configurations (want 2 each)")
    device = (d / "mlp_device.txt").read_text().split(",")[0].strip()
    points: dict[str, list] = {"read": [], "copy": []}
    for (name, warps, inflight, copy), vals in zip(configs, rows[1::2]):
        points["copy" if copy else "read"].append({
            "config": name, "warps_per_sm": warps, "inflight_bytes_per_sm": inflight,
            "dram_pct": round(vals[UNITS["dram"]], 2), "duration_ns": vals.get(DURATION),
            "dram_bytes": sum(vals.get(m, 0.0) for m in DRAM_BYTES)})
    for p in points.values():
        p.sort(key=lambda r: (r["inflight_bytes_per_sm"], r["warps_per_sm"]))
    return {device: points}


ABOUT = ("DRAM share of peak (ncu dram__throughput.avg.pct_of_peak_sustained_elapsed, clocks uncontrolled) "
         "reached by a streaming loop with a given number of bytes of global loads in flight per SM. Measured by "
         "scripts/gpu/record_mlp.sh (scripts/gpu/mlp_probe.cu), converted by scripts/gpu/mlp_table.py. "
         "Read by gpa_lsp/analysis/parallelism.py.")


if __name__ == "__main__":
    devices: dict = {}
    for arg in sys.argv[1:]:
        devices.update(table(Path(arg)))
    print(json.dumps({"about": ABOUT, "devices": devices}, indent=1))
