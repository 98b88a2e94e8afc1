#!/usr/bin/env python3
"""Launch-level hardware metrics of every case's original and improved variant (GPU machine).

Why: PC samples say where warps wait, not how busy the memory system behind them is. To check
an estimate against the hardware's own numbers -- and to bound it where a fix leaves the memory
traffic unchanged -- each variant's one timed launch is measured by Nsight Compute: duration,
DRAM/L2/L1 bytes and each unit's throughput as a share of its sustained peak (ncu's Speed of
Light breakdown). Written to ``launch_metrics.json`` beside ``timings.json``; read by
``report.py`` (the "limit after" column of docs/accuracy.md).

Runs on the device (Python 3.12, standard library only; nvcc, ncu and a GPU). Builds with
``record.py``'s rules, profiles the first launch of the case's kernel after one warm-up.

    python3 benchmarks/accuracy/launch_metrics.py [--out launch_metrics.json] [case ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from record import build, environment, find_cases  # noqa: E402

from gpa_lsp.profile.throughput import parse_raw_csv  # noqa: E402  (standard library only)

METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_bytes.sum", "l1tex__t_bytes.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.avg", "smsp__cycles_active.avg", "gpc__cycles_elapsed.avg.per_second",
    "launch__registers_per_thread",
    "breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
)


# device attributes and link facts ncu adds to every row: not launch measurements
DROP = ("device__attribute", "nvlink__", "numa__", "c2clink__", "profiler__", "pmsampling:")


def parse_raw(text: str) -> dict[str, float]:
    """The first launch of ``ncu --page raw --csv``: metric -> number (ns, bytes, Hz), device facts left out."""
    rows = parse_raw_csv(text, wanted=None)
    return {n: v for n, v in rows[0][1].items() if not n.startswith(DROP)} if rows else {}


def measure(ncu: str, binary: Path, kernel: str, timeout: float, clocks: str) -> tuple[dict, str | None]:
    """The timed launch (after the harness's warm-up); the first one if there is only one."""
    got, err = _measure(ncu, binary, kernel, timeout, clocks, skip=1)
    if err:
        got, err = _measure(ncu, binary, kernel, timeout, clocks, skip=0)
    return got, err


def _measure(ncu: str, binary: Path, kernel: str, timeout: float, clocks: str, skip: int) -> tuple[dict, str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        rep = Path(tmp) / "m"
        argv = [ncu, "--metrics", ",".join(METRICS), "--kernel-name", f"regex:{kernel}",
                "--launch-skip", str(skip), "--launch-count", "1", "--clock-control", clocks, "-f", "-o", str(rep), str(binary), "--quick"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=binary.parent)
        if proc.returncode != 0 or not Path(str(rep) + ".ncu-rep").exists():
            return {}, f"ncu failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}"
        raw = subprocess.run([ncu, "--import", str(rep) + ".ncu-rep", "--page", "raw", "--csv"],
                             capture_output=True, text=True, timeout=timeout)
        got = parse_raw(raw.stdout)
        return got, None if got else f"no metrics exported: {raw.stderr[-500:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--out", default=str(Path(__file__).with_name("launch_metrics.json")))
    ap.add_argument("--nvcc", default=os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--ncu", default=os.environ.get("NCU") or shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--clock-control", default="none", choices=("none", "base"),
                    help="ncu's clock control: none (default) measures at the clocks the timed runs see")
    args = ap.parse_args(argv)
    cases = find_cases(args.cases)
    metas = {c: tomllib.loads((c / "case.toml").read_text()) for c in cases}
    jobs = [(c, v) for c in cases for v in ("original", "improved")]
    with cf.ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        built = dict(zip(jobs, pool.map(lambda j: build(args.nvcc, j[0], j[1], metas[j[0]]), jobs)))
    results, failures = [], []
    for (case, variant), (binary, err) in built.items():
        kernel = metas[case]["kernel"]
        if err is None:
            got, err = measure(args.ncu, binary, kernel, args.timeout, args.clock_control)
        if err:
            failures.append({"case": case.name, "variant": variant, "error": err})
            print(f"{case.name}/{variant}: {err}", file=sys.stderr)
            continue
        results.append({"case": case.name, "variant": variant, "kernel": kernel, "metrics": got})
        print(f"{case.name}/{variant}: {got.get('gpu__time_duration.sum')} ns, "
              f"mem {got.get('gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed')}%", flush=True)
    doc = {**environment(args.nvcc), "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "metrics": list(METRICS), "clock_control": args.clock_control, "results": results, "failures": failures}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
