"""Does a smaller CUPTI hardware buffer drop samples? (issue 17, the sampling run's start-up)

On the GPU machine (standard library only):

    PYTHONPATH=. python3 benchmarks/profiling/bench_hw_buffer.py --out DIR [--repeat 3]
        [--sizes 512,256,128,64] [--period 12] [PROJECT_DIR ...]

Per project, in one session: one warm-up, then ``--repeat`` rounds, each running
``gpa profile DIR --no-build --no-throughput --sampling-period P`` once per buffer size
(``GPA_CUPTI_HW_BYTES`` in gpa's environment; the order rotates each round). Records the whole
command's wall time, the harness's own wall time, the samples, the samples CUPTI dropped and its
hardware-buffer-full flag (the library's T records), the samples per kernel; writes DIR/hw_buffer.json
after every run and appends each bundle to DIR/bundles.zip.

Here (no GPU), the advice of each returned bundle:

    python3 benchmarks/profiling/bench_hw_buffer.py --advise DIR/hw_buffer.json DIR/bundles.zip

adds the top advice of the hottest kernel (optimizer, estimate, line) to each run and prints the
table of benchmarks/profiling/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.profile.bundle import read_bundle  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_PROJECTS = (HERE / "probe", HERE / "long_1s", REPO / "kernels" / "restrict_fir")


def _record(bundle: Path) -> dict:
    b = read_bundle(bundle)
    per: dict[str, int] = {}
    for pc in b.profile.pcs:
        per[pc.function] = per.get(pc.function, 0) + pc.total
    cupti = b.manifest.get("cupti", {})
    return {"samples": b.profile.total_samples, "dropped": b.profile.dropped_samples,
            "hardware_buffer_full": cupti.get("hardware_buffer_full"), "complete": cupti.get("complete"),
            "harness_wall_s": b.manifest.get("harness_wall_s"), "per_kernel": per}


def bench(project: Path, sizes: list[int], repeat: int, period: int, out: Path, doc: dict) -> None:
    from gpa_lsp.build import build
    from gpa_lsp.config import load

    build(load(project)).check()
    gpa = [sys.executable, "-m", "gpa_lsp.commands.profile", str(project), "--no-build", "--no-throughput",
           "--sampling-period", str(period)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = doc["projects"].setdefault(project.name, {"project": str(project), "runs": []})["runs"]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*gpa, "--out", str(Path(tmp) / "warm.gpabundle")], env=env, capture_output=True,
                       timeout=300)   # the driver, the disk cache, the injection library's build
        for rnd in range(repeat):
            for mb in sizes[rnd % len(sizes):] + sizes[:rnd % len(sizes)]:
                name = f"{project.name}_{mb}mb_{rnd}.gpabundle"
                bundle = Path(tmp) / name
                t0 = time.monotonic()
                proc = subprocess.run([*gpa, "--out", str(bundle)], env={**env, "GPA_CUPTI_HW_BYTES": str(mb << 20)},
                                      capture_output=True, text=True, timeout=300)
                wall = time.monotonic() - t0
                row = {"mb": mb, "round": rnd, "wall_s": round(wall, 3), "rc": proc.returncode,
                       "log": (proc.stderr + proc.stdout)[-600:], "bundle": name}
                if proc.returncode == 0 and bundle.is_file():
                    row.update(_record(bundle))
                    with zipfile.ZipFile(out / "bundles.zip", "a") as z:
                        z.write(bundle, name)
                runs.append(row)
                (out / "hw_buffer.json").write_text(json.dumps(doc, indent=1))
                print(f"{project.name} {mb} MB round {rnd}: {wall:.2f} s, samples {row.get('samples')}, "
                      f"dropped {row.get('dropped')}, full {row.get('hardware_buffer_full')}", flush=True)


def advise(results: Path, bundles: Path) -> None:
    """Top advice of the hottest kernel for each run (here, from the returned bundles)."""
    from gpa_lsp.analysis.advisor import advise_bundle
    from gpa_lsp.config import load

    doc = json.loads(results.read_text())
    smap = [(doc["repo"], str(REPO))]
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(bundles) as z:
        z.extractall(tmp)
        for name, proj in doc["projects"].items():
            local = REPO / Path(proj["project"]).relative_to(doc["repo"])
            cfg = load(local)
            for row in proj["runs"]:
                if "samples" not in row:
                    continue
                hot = max(row["per_kernel"], key=row["per_kernel"].get)
                report = advise_bundle(str(Path(tmp) / row["bundle"]), config=cfg, source_map=smap)
                kr = next((k for k in report.kernels if k.name == hot), None)
                top = kr.advice[0] if kr is not None and kr.advice else None
                row["top_advice"] = None if top is None else {
                    "kernel": hot, "optimizer": top.optimizer, "estimate": round(top.estimated_speedup, 3),
                    "line": top.location.line if top.location else None,
                    "ranked": [a.optimizer for a in kr.advice[:3]]}
    results.write_text(json.dumps(doc, indent=1))
    print(table(doc))


def table(doc: dict) -> str:
    out = ["| harness | buffer | wall (median) | harness wall | samples (median) | dropped | buffer full | top advice (hottest kernel) |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, proj in doc["projects"].items():
        by: dict[int, list[dict]] = {}
        for row in proj["runs"]:
            by.setdefault(row["mb"], []).append(row)
        for mb in sorted(by, reverse=True):
            rows = [r for r in by[mb] if "samples" in r]
            if not rows:
                out.append(f"| {name} | {mb} MB | failed | | | | | |")
                continue
            adv = sorted({f"{a['optimizer']} {a['estimate']:.2f}x l.{a['line']}" for r in rows
                          if (a := r.get("top_advice"))})
            out.append(f"| {name} | {mb} MB | {statistics.median(r['wall_s'] for r in rows):.2f} s "
                       f"({', '.join(format(r['wall_s'], '.2f') for r in rows)}) "
                       f"| {statistics.median(r['harness_wall_s'] for r in rows):.2f} s "
                       f"| {statistics.median(r['samples'] for r in rows):,.0f} "
                       f"({min(r['samples'] for r in rows):,}-{max(r['samples'] for r in rows):,}) "
                       f"| {sum(r['dropped'] for r in rows)} | {sum(bool(r['hardware_buffer_full']) for r in rows)} "
                       f"| {'; '.join(adv) or '-'} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("projects", nargs="*", default=[str(p) for p in DEFAULT_PROJECTS])
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="512,256,128,64", help="MB, comma separated")
    ap.add_argument("--period", type=int, default=12)
    ap.add_argument("--advise", nargs=2, metavar=("RESULTS_JSON", "BUNDLES_ZIP"))
    args = ap.parse_args()
    if args.advise:
        advise(Path(args.advise[0]), Path(args.advise[1]))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    doc = {"device": device, "date": time.strftime("%Y-%m-%d"), "repo": str(REPO), "period": args.period,
           "repeat": args.repeat, "projects": {}}
    sizes = [int(s) for s in args.sizes.split(",")]
    for p in args.projects:
        bench(Path(p).resolve(), sizes, args.repeat, args.period, out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
