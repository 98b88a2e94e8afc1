"""Profiling overhead: the same harness bare, under the CUPTI collector and under ncu, in one run.

    PYTHONPATH=. python3 benchmarks/profiling/bench_overhead.py [PROJECT_DIR] [--repeat 5] [--json OUT]

Wall time of the harness process (median of ``--repeat`` runs; ncu once or
twice as it is slow). Ratios are against the bare run of the same session:
targets CUPTI <= 1.3x bare and ncu >= 5x slower than CUPTI. Needs a GPU.
Standard library only, so it runs on the GPU machine as it is.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.build import build  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.profile import harness  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts, collect_result  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(Path(__file__).with_name("probe")))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ncu-repeat", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    config = load(args.project)
    exe = build(config).check().output
    command, cwd, env0 = _harness_parts(config, exe)
    cupti = find_cupti()
    t0 = time.monotonic()
    lib = injection_library(cupti)
    lib_build_s = time.monotonic() - t0

    def timed(env=None, wrapper=()):
        return harness.run(command, cwd=cwd, env={**env0, **(env or {})}, timeout=600, wrapper=wrapper).wall_s

    timed()  # warm the driver / disk cache
    bare, cupti_runs, cupti_collect = [], [], []
    for _ in range(args.repeat):
        bare.append(timed())
        with tempfile.TemporaryDirectory() as tmp:
            cupti_runs.append(timed({"CUDA_INJECTION64_PATH": str(lib), "GPA_CUPTI_OUT": tmp,
                                     "GPA_CUPTI_SAMPLING_PERIOD": str(config.profile.sampling_period)}))
    # the whole CUPTI collection with and without the unit-throughput pass (a second run under
    # ncu --metrics, profile/throughput.py): what the memory-system bound costs per save
    no_sol = replace(config, profile=replace(config.profile, throughput=False))
    cupti_collect_nosol = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            t0 = time.monotonic()
            collect_result(no_sol, collector="cupti", out=Path(tmp) / "c0.gpabundle", build=False)
            cupti_collect_nosol.append(time.monotonic() - t0)
            t0 = time.monotonic()
            collect_result(config, collector="cupti", out=Path(tmp) / "c.gpabundle", build=False)
            cupti_collect.append(time.monotonic() - t0)
        ncu_runs, ncu_collect = [], []
        for _ in range(args.ncu_repeat):
            t0 = time.monotonic()
            res = collect_result(config, collector="ncu", out=Path(tmp) / "n.gpabundle", build=False)
            ncu_collect.append(time.monotonic() - t0)
            ncu_runs.append(res.wall_s)
    med = statistics.median
    out = {
        "project": str(Path(args.project).resolve().relative_to(REPO)) if str(Path(args.project).resolve()).startswith(str(REPO)) else args.project,
        "repeat": args.repeat,
        "bare_s": med(bare), "cupti_s": med(cupti_runs), "ncu_s": med(ncu_runs),
        "cupti_collect_s": med(cupti_collect), "ncu_collect_s": med(ncu_collect),
        "cupti_collect_without_throughput_s": med(cupti_collect_nosol),
        "throughput_pass_over_collect": med(cupti_collect) / med(cupti_collect_nosol),
        "cupti_over_bare": med(cupti_runs) / med(bare),
        "ncu_over_cupti": med(ncu_runs) / med(cupti_runs),
        "ncu_collect_over_cupti_collect": med(ncu_collect) / med(cupti_collect),
        "injection_library_build_s": lib_build_s,
        "runs": {"bare": bare, "cupti": cupti_runs, "ncu": ncu_runs},
        "cupti": {"library": str(cupti.library), "api_version": cupti.api_version, "origin": cupti.origin},
    }
    print(json.dumps(out, indent=1))
    print(f"bare {out['bare_s']:.3f} s | CUPTI {out['cupti_s']:.3f} s ({out['cupti_over_bare']:.2f}x bare, "
          f"target <= 1.3x) | ncu {out['ncu_s']:.3f} s ({out['ncu_over_cupti']:.1f}x CUPTI, target >= 5x) | "
          f"CUPTI collect {out['cupti_collect_without_throughput_s']:.2f} s -> {out['cupti_collect_s']:.2f} s "
          f"with the throughput pass ({out['throughput_pass_over_collect']:.2f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
