"""Replay passes of the counters run's metric sets, by the CUPTI the collector uses (``find_cupti``):
``metric_passes.c`` built against that CUPTI's Perfworks (``libnvperf_host.so`` beside
``libcupti``) and run for the five unit shares, the counters run's metrics, its four shares without
the launch's amounts (DRAM bytes, duration, clock), the amounts alone, and each share alone.

    PYTHONPATH=. python3 benchmarks/profiling/passes_on_device.py [--chip GH100] [--json OUT]

Host-side only (no GPU is used), but the count depends on the Perfworks version: run it where the
collector runs (the device's CUPTI) for the figures that matter there; the counters run's own
``G`` record (passes of the config image it replays) is the check. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.profile.cupti import counters  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cc, find_cupti  # noqa: E402
from gpa_lsp.profile.throughput import AMOUNTS, UNITS  # noqa: E402

SOURCE = Path(__file__).with_name("metric_passes.c")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chip", default="GH100")
    ap.add_argument("--json")
    args = ap.parse_args()
    cupti = find_cupti()
    host = cupti.libdir / "libnvperf_host.so"
    sets = {"five shares": list(UNITS.values()), "counters run (counters.METRICS)": list(counters.METRICS),
            "four shares (counters.SHARES)": list(counters.SHARES), "amounts (throughput.AMOUNTS)": list(AMOUNTS),
            **{f"{u} alone": [m] for u, m in UNITS.items()}}
    out = {"cupti": str(cupti.library), "api_version": cupti.api_version, "chip": args.chip, "sets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "metric_passes"
        proc = subprocess.run([find_cc(), "-O1", "-I", str(cupti.include), str(SOURCE), "-o", str(exe), str(host),
                               f"-Wl,-rpath,{cupti.libdir}"], capture_output=True, text=True)
        if proc.returncode != 0:
            out["error"] = proc.stderr[-3000:]
        else:
            for name, metrics in sets.items():
                r = subprocess.run([str(exe), args.chip, *metrics], capture_output=True, text=True, timeout=120)
                out["sets"][name] = {"metrics": metrics, "output": (r.stdout + r.stderr).strip()}
                print(f"{name}: {out['sets'][name]['output']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
