"""One `gpa profile` against the bare harness and against Nsight Compute's own per-instruction sampling.

    PYTHONPATH=. python3 benchmarks/profiling/bench_one_run.py [PROJECT_DIR ...] [--repeat 3]
        [--ncu-repeat 1] [--json OUT]

Per harness, in one session, interleaved round by round (medians of ``--repeat``):
- ``bare``: the harness alone;
- ``default``: ``python3 -m gpa_lsp.commands.profile DIR --no-build`` with the project's settings
  (CUPTI PC sampling, then unit throughput: ``[profile] throughput_collector``, auto = CUPTI's
  Range Profiler), the whole command as a user waits for it (Python start-up, bundle written);
- ``sampling``: the same with ``--no-throughput`` (what the editor waits for before the advice);
- ``ncu``: ``ncu --section SourceCounters --section WarpStateStats -c 5`` on the harness, the
  comparison of the issue (no export, no conversion);
- ``ncu_throughput`` (once): the default with ``--throughput-collector ncu``, the pass it replaces.
Targets (issue 17): default <= 2x bare on a 0.4 s harness, <= 1.2x on a 3 s one, and at least 4x
faster than ncu's per-instruction sampling on every harness. Needs a GPU and ncu; standard
library only, so it runs on the GPU machine as it is.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.build import build  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.profile import harness  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402
from gpa_lsp.toolchain import find_tool  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_PROJECTS = ("probe", "long_1s", "long_run", "long_5s")


def _timed(argv, cwd, env=None) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=900)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-2000:]}")
    return wall, proc.stderr + proc.stdout


def bench(project: Path, repeat: int, ncu_repeat: int, out_dir: Path) -> dict:
    config = load(project)
    exe = build(config).check().output
    command, cwd, env0 = _harness_parts(config, exe)
    argv, _ = harness.argv_of(command)
    ncu = find_tool("ncu", config.profile.ncu)
    env = {**os.environ, **dict(env0), "PYTHONPATH": str(REPO)}
    gpa = [sys.executable, "-m", "gpa_lsp.commands.profile", str(project), "--no-build"]
    bundle = out_dir / f"{project.name}.gpabundle"

    def bare():
        return harness.run(command, cwd=cwd, env=dict(env0), timeout=600).wall_s

    bare()   # warm the driver and the disk cache
    _timed([*gpa, "--out", str(bundle)], REPO, env)   # and the injection library's cache
    runs: dict[str, list[float]] = {"bare": [], "default": [], "sampling": [], "ncu": [], "ncu_throughput": []}
    logs: dict[str, str] = {}
    for _ in range(repeat):
        runs["bare"].append(bare())
        t, logs["default"] = _timed([*gpa, "--out", str(bundle)], REPO, env)
        runs["default"].append(t)
        t, logs["sampling"] = _timed([*gpa, "--no-throughput", "--out", str(bundle)], REPO, env)
        runs["sampling"].append(t)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(ncu_repeat):
            t, _ = _timed([ncu, "--section", "SourceCounters", "--section", "WarpStateStats", "-c", "5",
                           "-f", "-o", str(Path(tmp) / "r"), *argv], cwd, dict(env0))
            runs["ncu"].append(t)
    t, logs["ncu_throughput"] = _timed([*gpa, "--throughput-collector", "ncu", "--out", str(bundle)], REPO, env)
    runs["ncu_throughput"].append(t)
    # the default once more with the timing marks, for where the time goes
    _, logs["timing"] = _timed([*gpa, "--out", str(bundle)], REPO, {**env, "GPA_PROFILE_TIMING": "1"})
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    return {
        "project": str(project.relative_to(REPO)) if project.is_relative_to(REPO) else str(project),
        "harness": list(argv), "sampling_period": config.profile.sampling_period,
        "repeat": repeat, "median_s": med, "runs": runs,
        "default_over_bare": med["default"] / med["bare"],
        "sampling_over_bare": med["sampling"] / med["bare"],
        "ncu_over_default": med["ncu"] / med["default"],
        "ncu_throughput_over_default": med["ncu_throughput"] / med["default"],
        "logs": {k: v[-3000:] for k, v in logs.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("projects", nargs="*", default=[str(HERE / p) for p in DEFAULT_PROJECTS])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ncu-repeat", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    cupti = find_cupti()
    injection_library(cupti)
    rows = []
    out = {"device": _device(), "cupti": {"library": str(cupti.library), "api_version": cupti.api_version},
           "date": time.strftime("%Y-%m-%d"), "rows": rows}
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.projects:
            row = bench(Path(p).resolve(), args.repeat, args.ncu_repeat, Path(tmp))
            rows.append(row)
            if args.json:   # after each harness: a run stopped at its time limit keeps what it has
                Path(args.json).write_text(json.dumps(out, indent=1))
            m = row["median_s"]
            print(f"{row['project']}: bare {m['bare']:.2f} s | default {m['default']:.2f} s "
                  f"({row['default_over_bare']:.2f}x bare) | sampling only {m['sampling']:.2f} s "
                  f"({row['sampling_over_bare']:.2f}x) | ncu sampling {m['ncu']:.2f} s "
                  f"({row['ncu_over_default']:.2f}x default) | default with ncu --metrics {m['ncu_throughput']:.2f} s",
                  flush=True)
    return 0


def _device() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
