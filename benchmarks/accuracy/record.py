#!/usr/bin/env python3
"""Time every case's original and each of its variants on the GPU machine.

Runs on the device (Python 3.12, standard library only, nvcc and a GPU; no
gpa_lsp import). For each ``kernels/<case>/`` with a ``case.toml``: build the
original and every ``[[variant]]`` (the improved file for a case without
variants) with nvcc (in parallel), then time them in ``--rounds`` rounds, each
round running every program of a case once, original first (interleaved: drift
in clocks and temperature reaches every variant alike), never two timings at
once. Each run prints ``GPA_TIMING {json}`` (the median of its ``--runs``
launches); a program's figure is the median over its rounds.

With ``--durations`` each round also runs every program once more under gpa's
CUPTI injection library in its durations-only mode (kernel activity records, no
PC sampling: what ``gpa verify`` times) and records ``duration_ms``, the median
over rounds of each run's median launch duration (first launch left out). Why
both: a CUDA event pair around one synchronised launch also counts the launch's
submission and the event records (a few microseconds), which no change to the
kernel removes; the advisor estimates the kernel's own time, as its profile and
``gpa verify`` measure it. That mode imports gpa_lsp (PYTHONPATH with the
repository and its wheels). ``timings.json``
is rewritten after every case, so a run cut short keeps what it measured. A
harness that fails its own result check, crashes or prints no timing is recorded
under ``failures`` and makes the exit status 1.

    python3 benchmarks/accuracy/record.py [--runs 10] [--rounds 2] [--out timings.json] [case ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import functools
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


def programs(meta: dict) -> list[tuple[str, str, list[str]]]:
    """(variant name, source file, extra nvcc flags) of a case: the original first."""
    out = [("original", meta.get("file", "original.cu"), [])]
    variants = meta.get("variant") or []
    if variants:
        out += [(v["name"], v["file"], list(v.get("flags", []))) for v in variants]
    else:
        out.append(("improved", meta["improved"], list(meta.get("improved_flags", []))))
    return out


def nvcc_flags(case: Path, extra: list[str]) -> list[str]:
    build = tomllib.loads((case / "gpa.toml").read_text()).get("build", {})
    flags = list(build.get("nvcc_flags", ["-O3", "-arch=sm_90"]))
    return flags + list(extra) + ["-lineinfo"]


def build(nvcc: str, case: Path, variant: str, file: str, extra: list[str]) -> tuple[Path, str | None]:
    source = case / file
    # the original where gpa.toml builds it, so `gpa profile --no-build` can record it afterwards
    out = case / "build" / ("original" if variant == "original" else f"v_{variant}")
    out.parent.mkdir(exist_ok=True)
    stamp = out.with_suffix(".flags")
    want = " ".join(nvcc_flags(case, extra))
    newest = max(source.stat().st_mtime, (KERNELS / "common" / "harness.cuh").stat().st_mtime)
    if out.is_file() and out.stat().st_mtime > newest and stamp.is_file() and stamp.read_text() == want:
        return out, None          # built by an earlier step of the same device call
    argv = [nvcc, *nvcc_flags(case, extra), "-o", str(out), str(source)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return out, f"nvcc failed ({proc.returncode}): {proc.stderr[-2000:]}"
    stamp.write_text(want)
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


@functools.lru_cache(maxsize=1)
def _durations_library():
    """(the CUPTI install, gpa's injection library built against it): found and built once per
    recording, not once per program run."""
    from gpa_lsp.profile.cupti.builder import find_cupti, injection_library
    cupti = find_cupti()
    return cupti, injection_library(cupti)


def duration_harness(binary: Path, runs: int, timeout: float, kernel: str | None) -> tuple[float | None, str | None]:
    """One harness run under the durations-only injection library: the kernel's median launch
    duration in ms (``verify.timing.per_run``: the first launch left out), or an error. The kernel
    is the case's (by its bare name), else the launched kernel with the most total time."""
    import tempfile
    from gpa_lsp.profile.cupti.reader import read_output
    from gpa_lsp.profile.demangle import base_name, demangle_all
    from gpa_lsp.verify.timing import per_run
    cupti, lib = _durations_library()
    with tempfile.TemporaryDirectory(prefix="gpa-dur-") as tmp:
        env = {**os.environ, "CUDA_INJECTION64_PATH": str(lib), "GPA_CUPTI_OUT": tmp, "GPA_CUPTI_NO_PCSAMPLING": "1",
               "LD_LIBRARY_PATH": os.pathsep.join(p for p in (str(cupti.libdir), os.environ.get("LD_LIBRARY_PATH", "")) if p)}
        try:
            proc = subprocess.run([str(binary), "--runs", str(runs)], capture_output=True, text=True,
                                  timeout=timeout, cwd=binary.parent.parent, env=env)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s"
        if proc.returncode != 0:
            return None, f"exit code {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}"
        run = read_output(tmp, output_tail=(proc.stdout + proc.stderr)[-2000:], require_samples=False)
    names = demangle_all(list(run.durations))
    by_base: dict[str, list[int]] = {}
    for name, ds in run.durations.items():
        by_base.setdefault(base_name(names.get(name, name)), []).extend(ds)
    if not by_base:
        return None, "no kernel activity records"
    pick = kernel if kernel in by_base else max(by_base, key=lambda b: sum(by_base[b]))
    ns = per_run(by_base[pick])
    return (ns / 1e6 if ns else None), (None if ns else f"no duration for {pick}")


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
    ap.add_argument("--runs", type=int, default=10, help="timed launches per harness run (>= 10)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (each runs every program once)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("timings.json")))
    ap.add_argument("--nvcc", default=os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per harness run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel nvcc builds")
    ap.add_argument("--budget", type=float, default=0.0, help="stop starting new cases after this many seconds (0: none)")
    ap.add_argument("--build-only", action="store_true", help="build every program, time nothing")
    ap.add_argument("--originals", action="store_true", help="with --build-only: the originals only")
    ap.add_argument("--durations", action="store_true",
                    help="also time each program's kernel durations from CUPTI activity records (imports gpa_lsp)")
    args = ap.parse_args(argv)
    if args.runs < 10:
        ap.error("--runs must be at least 10")

    cases = find_cases(args.cases)
    metas = {c: tomllib.loads((c / "case.toml").read_text()) for c in cases}
    t0 = time.monotonic()
    jobs = [(c, name, file, extra) for c in cases for name, file, extra in programs(metas[c])
            if not (args.build_only and args.originals and name != "original")]
    binaries: dict[tuple[Path, str], Path] = {}
    failures: list[dict] = []
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(build, args.nvcc, c, v, f, x): (c, v) for c, v, f, x in jobs}
        for fut in cf.as_completed(futures):
            c, v = futures[fut]
            binary, err = fut.result()
            if err:
                failures.append({"case": c.name, "variant": v, "stage": "build", "error": err})
            else:
                binaries[(c, v)] = binary
    print(f"built {len(binaries)}/{len(jobs)} binaries in {time.monotonic() - t0:.1f} s", flush=True)
    for f in failures:
        print(f"BUILD FAILED {f['case']}/{f['variant']}: {f['error'][:300]}", flush=True)
    if args.build_only:
        return 1 if failures else 0

    results: list[dict] = []
    env = environment(args.nvcc)

    def save() -> None:
        doc = {**env, "runs": args.runs, "rounds": args.rounds, "results": results, "failures": failures,
               "wall_s": round(time.monotonic() - t0, 1)}
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")

    for c in cases:
        if args.budget and time.monotonic() - t0 > args.budget:
            failures.append({"case": c.name, "variant": "*", "stage": "run", "error": "not timed: --budget reached"})
            continue
        kernel = metas[c].get("kernel")
        names = [v for v, _, _ in programs(metas[c]) if (c, v) in binaries]
        rounds: dict[str, list[dict]] = {v: [] for v in names}
        durations: dict[str, list[float]] = {v: [] for v in names}
        dead: set[str] = set()
        for _ in range(args.rounds):
            for v in names:
                if v in dead:
                    continue
                timings, err, text = run_harness(binaries[(c, v)], args.runs, args.timeout)
                if err:
                    failures.append({"case": c.name, "variant": v, "stage": "run", "error": err})
                    print(f"FAIL {c.name}/{v}: {err.splitlines()[0] if err else ''}", flush=True)
                    dead.add(v)
                    continue
                rounds[v].append(next((t for t in timings if t.get("kernel") == kernel), timings[0]))
                if args.durations:
                    ms, derr = duration_harness(binaries[(c, v)], args.runs, args.timeout, kernel)
                    if derr:
                        print(f"DURATION FAIL {c.name}/{v}: {derr.splitlines()[0]}", flush=True)
                    elif ms:
                        durations[v].append(ms)
        for v in names:
            got = rounds[v]
            if v in dead or not got:
                continue
            med = sorted(t["median_ms"] for t in got)
            n = len(med)
            median = med[n // 2] if n % 2 else 0.5 * (med[n // 2 - 1] + med[n // 2])
            results.append({"case": c.name, "variant": v, "kernel": got[0].get("kernel"), "median_ms": median,
                            "runs": sum(t["runs"] for t in got), "rounds": [t["median_ms"] for t in got],
                            "min_ms": min(t.get("min_ms", t["median_ms"]) for t in got),
                            "max_ms": max(t.get("max_ms", t["median_ms"]) for t in got), "check": "ok"})
            if durations[v]:
                d = sorted(durations[v])
                k = len(d)
                results[-1]["duration_ms"] = d[k // 2] if k % 2 else 0.5 * (d[k // 2 - 1] + d[k // 2])
                results[-1]["duration_rounds"] = durations[v]
            print(f"{c.name:24s} {v:16s} {median:9.4f} ms  {results[-1].get('duration_ms', float('nan')):9.4f} ms (duration)", flush=True)
        save()
    save()
    by_case = {(r["case"], r["variant"]): r["median_ms"] for r in results}
    for c in cases:
        o = by_case.get((c.name, "original"))
        for v, _, _ in programs(metas[c])[1:]:
            i = by_case.get((c.name, v))
            if o and i:
                print(f"speedup {c.name:24s} {v:16s} {o / i:6.2f}x", flush=True)
    print(f"wrote {args.out} ({len(results)} timings, {len(failures)} failures, {round(time.monotonic() - t0, 1)} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
