"""What the counters run's replay of one launch costs by metric set: probe's chase, first launch,
with the counters run's four unit shares alone (``counters.SHARES``), with DRAM bytes, and the
whole run (``counters.METRICS``: the launch's amounts too); ``--five`` adds DRAM alone (1 pass)
and the five unit shares (SM pipes too); 3 times each, interleaved: the library's passes (``G``),
the time from the Range Profiler's set-up to the measured launch (Z marks ``counters_setup_done``
-> ``counters_first_launch_measured``), the whole run, and what was measured.

    PYTHONPATH=. python3 benchmarks/profiling/replay_cost.py [PROJECT] [--json OUT]

Needs a GPU; standard library only.
"""

from __future__ import annotations

import argparse
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
from gpa_lsp.profile.bundle import read_bundle  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts, _injection_env, _sampled_kernels  # noqa: E402
from gpa_lsp.profile.cupti import counters  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402
from gpa_lsp.profile.throughput import DRAM_BYTES, UNITS  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(HERE / "probe"))
    ap.add_argument("--json")
    ap.add_argument("--five", action="store_true", help="also DRAM alone and the five unit shares")
    args = ap.parse_args()
    config = load(Path(args.project).resolve())
    exe = build(config).check().output if config.build.sources or config.build.command else None
    command, cwd, env0 = _harness_parts(config, exe)
    cupti = find_cupti()
    lib = injection_library(cupti)
    profile = read_bundle(REPO / "tests/profile/fixtures/probe.cupti.gpabundle").profile
    kernels = _sampled_kernels(profile, config.profile.throughput_share)
    sets = {"four shares": list(counters.SHARES), "shares and DRAM bytes": [*counters.SHARES, *DRAM_BYTES],
            "counters run": list(counters.METRICS)}
    if args.five:
        sets = {"dram alone": [UNITS["dram"]], **sets, "five shares": list(UNITS.values())}
    out: dict[str, dict] = {name: {"metrics": m, "runs": []} for name, m in sets.items()}
    for _ in range(3):
        for name, metrics in sets.items():
            with tempfile.TemporaryDirectory() as tmp:
                env = _injection_env(lib, cupti, tmp, {**dict(env0), **counters.env(kernels, metrics=metrics),
                                                       "GPA_CUPTI_TIMING": "1"})
                t = time.monotonic()
                try:
                    harness.run(command, cwd=cwd, env=env, timeout=120)
                except Exception as exc:   # noqa: BLE001 - a benchmark records
                    out[name]["runs"].append({"error": str(exc)})
                    continue
                wall = time.monotonic() - t
                run = counters.read(tmp)
                marks = dict(run.marks)
                replay = (marks.get("counters_first_launch_measured", 0) - marks.get("counters_setup_done", 0)) / 1e9
                out[name]["runs"].append({"wall_s": round(wall, 3), "passes": run.passes, "replay_s": round(replay, 3),
                                          "errors": run.errors, "rows": run.rows})
    for name, row in out.items():
        ok = [r for r in row["runs"] if "wall_s" in r]
        if ok:
            row["median_wall_s"] = statistics.median(r["wall_s"] for r in ok)
            row["median_replay_s"] = statistics.median(r["replay_s"] for r in ok)
        print(name, row.get("median_wall_s"), row.get("median_replay_s"), [r.get("passes") for r in ok], flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
