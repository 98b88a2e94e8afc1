"""Where the sampling run's end goes, and what shortens it: the harness run directly (no gpa, no
runner) under the injection library with its timing marks, by library setting, rounds interleaved.

    PYTHONPATH=. python3 benchmarks/profiling/exit_cost.py [PROJECT] [--rounds 5] [--json OUT]

Variants: ``bare`` (no library); ``default``; ``drainN`` (``GPA_CUPTI_DRAIN_MS=N``: a shorter
periodic drain, to take samples while the kernels run and leave less to the end). Two more were measured at 6456017 and removed with the library settings they
used (benchmarks/profiling/README.md): ``finalize`` (``GPA_CUPTI_FINALIZE=1``: CUPTI detached
after the last record) and ``no_disable`` (``GPA_CUPTI_EXIT_NO_DISABLE=1``: no
cuptiPCSamplingDisable at exit). Each run
records the wall time (Popen to reaped, CLOCK_MONOTONIC), the harness's exit status and output,
the samples (total and per kernel: the variants must bring the same), and the library's marks
placed on the same clock through its ``Z clock0`` record: from the process's start to ``init``
(exec, the harness's start, cuInit), ``context_created``, ``sampling_enabled``, ``finish_start``
(the library's atexit handler), ``finish_drained``, ``finish_disabled``, ``end`` (last record
written), ``fini`` (the library's destructor, after every atexit handler), and the process's end.
Needs a GPU; standard library only.
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
from gpa_lsp.profile.collect import _harness_parts, _injection_env, hw_buffer_bytes, sampling_env  # noqa: E402
from gpa_lsp.profile.cupti import sample_volume  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402
from gpa_lsp.profile.cupti.reader import read_output  # noqa: E402

HERE = Path(__file__).resolve().parent
VARIANTS = {"bare": None, "default": {}, "drain50": {"GPA_CUPTI_DRAIN_MS": "50"},
            "drain20": {"GPA_CUPTI_DRAIN_MS": "20"}, "drain10": {"GPA_CUPTI_DRAIN_MS": "10"}}
TIMEOUT_S = 20


def _marks(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        p = line.split(" ")
        if p[0] == "Z" and len(p) == 3 and p[2].isdigit():
            out.setdefault(p[1], int(p[2]))
    return out


def one(argv, cwd, env, tmp: Path) -> dict:
    for f in tmp.glob("*"):
        f.unlink()
    t0 = time.monotonic_ns()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired:
        return {"rc": 124}
    t1 = time.monotonic_ns()
    row = {"rc": rc, "output": out[-500:], "wall_s": (t1 - t0) / 1e9}
    text = (tmp / "cupti.txt").read_text(errors="replace") if (tmp / "cupti.txt").exists() else ""
    if text:
        z = _marks(text)
        if "clock0" in z:
            base = z.pop("clock0") - t0
            row["marks_s"] = {k: round((base + v) / 1e9, 4) for k, v in z.items()}
            row["marks_s"]["exited"] = row["wall_s"]
        try:
            run = read_output(str(tmp), output_tail=out)
            per: dict[str, int] = {}
            for pc in run.profile.pcs:
                per[pc.function.split("(")[0][-40:]] = per.get(pc.function.split("(")[0][-40:], 0) + pc.total
            row.update(samples=run.profile.total_samples, dropped=run.profile.dropped_samples, per_kernel=per,
                       complete=run.complete, errors=run.errors, hw_full=run.hardware_buffer_full)
        except Exception as exc:   # noqa: BLE001 - a benchmark records, never stops
            row["read_error"] = str(exc)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(HERE / "probe"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--json")
    args = ap.parse_args()
    config = load(args.project)
    exe = build(config).check().output if config.build.sources or config.build.command else None
    command, cwd, env0 = _harness_parts(config, exe)
    argv, _ = harness.argv_of(command)
    cupti = find_cupti()
    lib = injection_library(cupti)
    period = config.profile.sampling_period
    volume = Path(config.resolve(".gpa")) / sample_volume.FILE
    key = sample_volume.harness_key(command, cwd, env0, config.profile.kernels)
    hw = sample_volume.sized(sample_volume.previous(volume, key), period, hw_buffer_bytes(period))
    out: dict = {"project": args.project, "period": period, "hw_bytes": hw, "runs": {v: [] for v in args.variants}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        envs = {}
        for name in args.variants:
            extra = VARIANTS[name]
            if extra is None:
                envs[name] = {**os.environ, **env0}
            else:
                e = _injection_env(lib, cupti, d, {**sampling_env(config, period, hw), **env0, **extra})
                envs[name] = {**os.environ, **e, "GPA_CUPTI_TIMING": "1"}
        one(argv, cwd, envs[args.variants[0]], tmp)          # warm the driver and the disk cache
        broken: set[str] = set()
        for _ in range(args.rounds):
            for name in args.variants:
                if name in broken:
                    continue
                row = one(argv, cwd, envs[name], tmp)
                out["runs"][name].append(row)
                if row["rc"] != 0:
                    broken.add(name)          # a hang or a crash costs the device time once
    summary = {}
    for name, rows in out["runs"].items():
        ok = [r for r in rows if r["rc"] == 0]
        if not ok:
            summary[name] = {"failed": rows[:1]}
            continue
        s = {"wall_s": statistics.median(r["wall_s"] for r in ok), "runs": len(ok), "of": len(rows),
             "outputs": sorted({r["output"] for r in ok})}
        if "samples" in ok[0]:
            s["samples"] = [min(r.get("samples", 0) for r in ok), statistics.median(r.get("samples", 0) for r in ok),
                            max(r.get("samples", 0) for r in ok)]
            s["dropped"] = max(r.get("dropped", 0) for r in ok)
            s["complete"] = all(r.get("complete") for r in ok)
            s["errors"] = sorted({e for r in ok for e in r.get("errors", [])})
            s["per_kernel"] = {k: statistics.median(r["per_kernel"].get(k, 0) for r in ok) for k in ok[0]["per_kernel"]}
        labels = sorted({k for r in ok for k in r.get("marks_s", {})}, key=lambda k: statistics.median(
            r["marks_s"][k] for r in ok if k in r.get("marks_s", {})))
        s["marks_s"] = {k: round(statistics.median(r["marks_s"][k] for r in ok if k in r.get("marks_s", {})), 4)
                        for k in labels}
        summary[name] = s
        print(f"{name}: " + json.dumps({k: v for k, v in s.items() if k != "outputs"}), flush=True)
    out["summary"] = summary
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
