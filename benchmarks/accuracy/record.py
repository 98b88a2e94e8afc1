#!/usr/bin/env python3
"""Time every case's original and improved variant on the GPU machine.

Runs on the device (Python 3.12, standard library only, nvcc and a GPU; no
gpa_lsp import). For each ``kernels/<case>/`` with a ``case.toml``: build both
variants with nvcc (in parallel), then run each harness in timed mode one after
the other (never two timings at once), collect its ``GPA_TIMING {json}`` line
and write ``timings.json``. A harness that fails its own result check, crashes
or prints no timing is recorded under ``failures`` and makes the exit status 1.

    python3 benchmarks/accuracy/record.py [--runs 20] [--out timings.json] [case ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
TIMING = re.compile(r"^GPA_TIMING (\{.*\})\s*$", re.M)


def find_cases(names: list[str]) -> list[Path]:
    folders = sorted(p.parent for p in KERNELS.glob("*/case.toml"))
    if names:
        wanted = set(names)
        folders = [f for f in folders if f.name in wanted]
        missing = wanted - {f.name for f in folders}
        if missing:
            sys.exit(f"no such case(s): {', '.join(sorted(missing))} (under {KERNELS})")
    return folders


def nvcc_flags(case: Path, variant: str, meta: dict) -> list[str]:
    build = tomllib.loads((case / "gpa.toml").read_text()).get("build", {})
    flags = list(build.get("nvcc_flags", ["-O3", "-arch=sm_90"]))
    if variant == "improved":
        flags += list(meta.get("improved_flags", []))
    return flags + ["-lineinfo"]


def build(nvcc: str, case: Path, variant: str, meta: dict) -> tuple[Path, str | None]:
    source = case / meta.get(variant if variant == "improved" else "file", f"{variant}.cu")
    out = case / "build" / variant
    out.parent.mkdir(exist_ok=True)
    argv = [nvcc, *nvcc_flags(case, variant, meta), "-o", str(out), str(source)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return out, f"nvcc failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return out, None


def run_harness(binary: Path, runs: int, timeout: float) -> tuple[list[dict], str | None, str]:
    try:
        proc = subprocess.run([str(binary), "--runs", str(runs)], capture_output=True, text=True,
                              timeout=timeout, cwd=binary.parent.parent)
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:.0f} s", ""
    text = proc.stdout + proc.stderr
    timings = [json.loads(m.group(1)) for m in TIMING.finditer(proc.stdout)]
    if proc.returncode != 0:
        return timings, f"exit code {proc.returncode}: {text[-1500:]}", text
    if not timings:
        return timings, "no GPA_TIMING line in the output", text
    return timings, None, text


def tool_output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment(nvcc: str) -> dict:
    smi = tool_output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    name, _, driver = smi.splitlines()[0].partition(",") if smi else ("unknown", "", "")
    m = re.search(r"release ([\d.]+), V([\d.]+)", tool_output([nvcc, "--version"]))
    return {
        "device": name.strip(),
        "driver": driver.strip(),
        "cuda": m.group(2) if m else "unknown",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": os.uname().nodename,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help="case folder names (default: all)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per harness (>= 10)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("timings.json")))
    ap.add_argument("--nvcc", default=os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per harness run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel nvcc builds")
    args = ap.parse_args(argv)
    if args.runs < 10:
        ap.error("--runs must be at least 10")

    cases = find_cases(args.cases)
    metas = {c: tomllib.loads((c / "case.toml").read_text()) for c in cases}
    t0 = time.monotonic()
    jobs = [(c, v) for c in cases for v in ("original", "improved")]
    binaries: dict[tuple[Path, str], Path] = {}
    failures: list[dict] = []
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(build, args.nvcc, c, v, metas[c]): (c, v) for c, v in jobs}
        for fut in cf.as_completed(futures):
            c, v = futures[fut]
            binary, err = fut.result()
            if err:
                failures.append({"case": c.name, "variant": v, "stage": "build", "error": err})
            else:
                binaries[(c, v)] = binary
    print(f"built {len(binaries)}/{len(jobs)} binaries in {time.monotonic() - t0:.1f} s", flush=True)

    results: list[dict] = []
    for c, v in jobs:
        if (c, v) not in binaries:
            continue
        kernel = metas[c].get("kernel")
        timings, err, text = run_harness(binaries[(c, v)], args.runs, args.timeout)
        if err:
            failures.append({"case": c.name, "variant": v, "stage": "run", "error": err})
            print(f"FAIL {c.name}/{v}: {err.splitlines()[0] if err else ''}", flush=True)
            continue
        chosen = next((t for t in timings if t.get("kernel") == kernel), timings[0])
        results.append({"case": c.name, "variant": v, "kernel": chosen.get("kernel"),
                        "median_ms": chosen["median_ms"], "runs": chosen["runs"],
                        "min_ms": chosen.get("min_ms"), "max_ms": chosen.get("max_ms"),
                        "check": "ok" if "CHECK FAILED" not in text else "failed"})
        print(f"{c.name:24s} {v:9s} {chosen['median_ms']:9.4f} ms", flush=True)

    doc = {**environment(args.nvcc), "runs": args.runs, "results": results, "failures": failures,
           "wall_s": round(time.monotonic() - t0, 1)}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    by_case = {(r["case"], r["variant"]): r["median_ms"] for r in results}
    for c in cases:
        o, i = by_case.get((c.name, "original")), by_case.get((c.name, "improved"))
        if o and i:
            print(f"speedup {c.name:24s} {o / i:6.2f}x", flush=True)
    print(f"wrote {args.out} ({len(results)} timings, {len(failures)} failures, {doc['wall_s']} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
