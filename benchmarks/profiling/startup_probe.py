"""Where the start-up of the two runs goes, one setting at a time (the library's Z records).

    PYTHONPATH=. python3 benchmarks/profiling/startup_probe.py [PROJECT_DIR] [--json OUT]

Runs the harness directly under the injection library (no gpa around it) with GPA_CUPTI_TIMING=1:
the counters run with the unit metrics only and with every metric of the ncu pass (replay passes,
set-up, per launch), and the sampling run with CUPTI's 512 MB hardware buffer and with 64 MB.
Prints the G and Z records and the wall time of each. Needs a GPU; standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.build import build  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.profile import harness, throughput  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts, _injection_env  # noqa: E402
from gpa_lsp.profile.cupti import counters  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402

KERNELS = ["_Z5chasePKiPKfPfii", "_Z7stencilPKfPfii", "_Z8localarrPKfPfii"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(Path(__file__).with_name("probe")))
    ap.add_argument("--json")
    args = ap.parse_args()
    config = load(args.project)
    exe = build(config).check().output
    command, cwd, env0 = _harness_parts(config, exe)
    cupti = find_cupti()
    lib = injection_library(cupti)
    os.environ["GPA_PROFILE_TIMING"] = "1"
    settings = {
        "bare": None,
        "counters_units": counters.env(KERNELS),
        "counters_all_metrics": counters.env(KERNELS, metrics=throughput.METRICS),
        "counters_units_hot_kernel_only": counters.env(KERNELS[:1]),
        "sampling_hw_512mb": {"GPA_CUPTI_SAMPLING_PERIOD": "12", "GPA_CUPTI_HW_BYTES": str(512 << 20)},
        "sampling_hw_64mb": {"GPA_CUPTI_SAMPLING_PERIOD": "12", "GPA_CUPTI_HW_BYTES": str(64 << 20)},
    }
    out = {}
    harness.run(command, cwd=cwd, env=dict(env0), timeout=120)   # warm
    for label, extra in [*settings.items(), *settings.items()]:   # twice, interleaved
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(env0) if extra is None else _injection_env(lib, cupti, tmp, {**dict(env0), **extra})
            t = time.monotonic()
            harness.run(command, cwd=cwd, env=env, timeout=120)
            wall = time.monotonic() - t
            recs = []
            if extra is not None and (Path(tmp) / "cupti.txt").exists():
                recs = [ln for ln in (Path(tmp) / "cupti.txt").read_text().splitlines() if ln[:2] in ("G ", "Z ", "E ", "F ")]
        out.setdefault(label, []).append({"wall_s": round(wall, 3), "records": recs})
        print(f"{label}: {wall:.3f} s  " + " | ".join(recs), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
