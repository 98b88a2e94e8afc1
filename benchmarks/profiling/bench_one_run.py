"""One `gpa profile` against the bare harness, the collector before issue 17's changes, and Nsight
Compute's own per-instruction sampling.

    PYTHONPATH=. python3 benchmarks/profiling/bench_one_run.py [PROJECT_DIR ...] [--repeat 3]
        [--before DIR] [--variants NAME ...] [--cases CASE_DIR ...] [--json OUT]

Per harness, in one session, interleaved round by round (medians of ``--repeat``), every
command whole as a user waits for it (Python start-up, bundle written), with
``GPA_PROFILE_TIMING=1`` (a few lines of marks; where the time goes):
- ``bare``: the harness alone;
- ``before``: ``python3 -m gpa_lsp.commands.profile DIR --no-build`` from the tree in ``--before``
  (the package as it was, e.g. ``git archive`` of the commit before), its defaults;
- ``remeasure``: the same command from this tree with the throughput cache emptied before the run
  (``.gpa/throughput-cache.json``): the counters run measures the hot kernels, as after a change
  to them; the hardware buffer sized from the previous run;
- ``default``: the same command with the cache the previous run left (warm: the hot kernels'
  unit throughput is reused and no counters run starts: a profile after a change elsewhere, or none);
- ``sampling``: ``--no-throughput`` (what the editor waits for before the advice);
- ``drain20`` (asked for with ``--variants``): the default with ``GPA_CUPTI_DRAIN_MS=20``; ``hw<MB>``
  with ``GPA_CUPTI_HW_BYTES`` at that many MB; ``worker<ms>`` with ``GPA_CUPTI_WORKER_SLEEP_MS``;
- ``cold`` (once): the default with neither cache (first profile of a harness; the GPU check's
  remembered pass, which is per machine and driver, is kept);
- ``ncu`` (``--ncu-repeat``): ``ncu --section SourceCounters --section WarpStateStats -c 5`` on the
  harness, the comparison of the issue (no export, no conversion).
Each gpa run keeps from its bundle: samples, the hardware buffer, unit throughput per kernel, where
it came from and the notes, so the variants can be checked to measure the same. ``--cases``:
kernels/ cases run once each with ``remeasure`` (their unit throughput against ncu's recorded
figures: ``benchmarks/profiling/README.md``). Targets (issue 17): default <= 2x bare on a 0.4 s
harness, <= 1.2x on a 3 s one, at least 4x faster than ncu's per-instruction sampling. Needs a
GPU and ncu; standard library only, so it runs on the GPU machine as it is.
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
from gpa_lsp.profile.bundle import read_bundle  # noqa: E402
from gpa_lsp.profile.collect import _harness_parts  # noqa: E402
from gpa_lsp.profile.cupti import sample_volume, throughput_cache  # noqa: E402
from gpa_lsp.profile.cupti.builder import find_cupti, injection_library  # noqa: E402
from gpa_lsp.toolchain import find_tool  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_PROJECTS = ("probe", "long_1s", "long_run", "long_5s")
VARIANTS = ("before", "remeasure", "default", "sampling")
GPA_TIMEOUT_S = 60
BROKEN: set[str] = set()      # variants that timed out once: skipped from then on (the device time is short)


def _timed(argv, cwd, env=None, timeout=GPA_TIMEOUT_S) -> tuple[float, int, str]:
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)
        rc, text = proc.returncode, proc.stderr + proc.stdout
    except subprocess.TimeoutExpired as exc:
        rc, text = 124, f"timed out after {timeout} s: {exc}"
    return time.monotonic() - t0, rc, text


def _bundle_facts(path: Path) -> dict:
    """What a run measured: samples, the hardware buffer, unit throughput per kernel, notes."""
    try:
        b = read_bundle(path)
    except Exception as exc:   # noqa: BLE001 - a benchmark records, never stops
        return {"error": str(exc)}
    per: dict[str, int] = {}
    for pc in b.profile.pcs:
        per[pc.function] = per.get(pc.function, 0) + pc.total
    cupti = b.manifest.get("cupti", {})
    return {"samples": b.profile.total_samples, "per_kernel": per,
            "hw_bytes": cupti.get("hardware_buffer_bytes"), "hw_full": cupti.get("hardware_buffer_full"),
            "hw_note": cupti.get("hardware_buffer_note"), "throughput_manifest": b.manifest.get("throughput"),
            "harness_wall_s": b.manifest.get("harness_wall_s"),
            "units": {k.name: dict(k.throughput.units) for k in b.profile.kernels if k.throughput is not None}}


def bench(project: Path, repeat: int, ncu_repeat: int, out_dir: Path, before: Path | None,
          names: tuple[str, ...] = VARIANTS) -> dict:
    config = load(project)
    exe = build(config).check().output if config.build.sources or config.build.command else None
    command, cwd, env0 = _harness_parts(config, exe)
    argv, _ = harness.argv_of(command)
    ncu = find_tool("ncu", config.profile.ncu) if ncu_repeat else None
    timing = {"GPA_PROFILE_TIMING": "1"}
    env = {**os.environ, **dict(env0), "PYTHONPATH": str(REPO), **timing}
    env_before = {**env, "PYTHONPATH": str(before)} if before else None
    gpa = [sys.executable, "-m", "gpa_lsp.commands.profile", str(project), "--no-build"]
    bundle = out_dir / f"{project.name}.gpabundle"
    volume = Path(config.resolve(".gpa")) / sample_volume.FILE
    units = Path(config.resolve(".gpa")) / throughput_cache.FILE

    def bare():
        return harness.run(command, cwd=cwd, env=dict(env0), timeout=600).wall_s

    # python -m and -c put the working folder first on sys.path: each tree runs from its own root;
    # (argv, env, caches emptied before the run)
    variants = {
        "before": ([*gpa, "--out", str(bundle)], env_before, ()),
        "remeasure": ([*gpa, "--out", str(bundle)], env, (units,)),
        "default": ([*gpa, "--out", str(bundle)], env, ()),
        "sampling": ([*gpa, "--no-throughput", "--out", str(bundle)], env, ()),
        # the default with the library's periodic drain at 20 ms (benchmarks/profiling/exit_cost.py)
        "drain20": ([*gpa, "--out", str(bundle)], {**env, "GPA_CUPTI_DRAIN_MS": "20"}, ()),
    }
    for name in names:   # the default with one library setting: hw<MB> (hardware buffer), worker<ms> (CUPTI's
        # decoding threads' sleep, GPA_CUPTI_WORKER_SLEEP_MS; CUPTI's own default 100 ms)
        if name.startswith("hw") and name[2:].isdigit():
            variants[name] = ([*gpa, "--out", str(bundle)], {**env, "GPA_CUPTI_HW_BYTES": str(int(name[2:]) << 20)}, ())
        elif name.startswith("worker") and name[6:].isdigit():
            variants[name] = ([*gpa, "--out", str(bundle)], {**env, "GPA_CUPTI_WORKER_SLEEP_MS": name[6:]}, ())
    variants = {k: v for k, v in variants.items() if k in names and (k != "before" or before is not None)}
    runs: dict[str, list[float]] = {"bare": [], **{k: [] for k in variants}, "cold": [], "ncu": []}
    facts: dict[str, list[dict]] = {k: [] for k in [*variants, "cold"]}
    logs: dict[str, str] = {}
    failures: list[dict] = []

    def gpa_run(name, argv_, env_, empty=()):
        if name in BROKEN:
            return
        bundle.unlink(missing_ok=True)
        for f in empty:
            f.unlink(missing_ok=True)
        t, rc, text = _timed(argv_, before if name == "before" else REPO, env_)
        logs[name] = text[-4000:]
        if rc != 0:
            failures.append({"variant": name, "rc": rc, "log": text[-3000:]})
            if rc == 124:
                BROKEN.add(name)
            return
        runs[name].append(t)
        facts[name].append({"wall_s": round(t, 3), **_bundle_facts(bundle)})

    bare()                                          # warm the driver and the disk cache
    gpa_run("cold", variants.get("default", variants.get("remeasure", ([*gpa, "--out", str(bundle)], env, ())))[0],
            env, (volume, units))                   # first profile of this harness: neither cache
    if before is not None and "before" in variants:
        _timed(variants["before"][0], before, variants["before"][1])   # the old tree's injection library built
    for _ in range(repeat):
        runs["bare"].append(bare())
        for name, (argv_, env_, empty) in variants.items():
            gpa_run(name, argv_, env_, empty)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(ncu_repeat):
            t, rc, _ = _timed([ncu, "--section", "SourceCounters", "--section", "WarpStateStats", "-c", "5",
                               "-f", "-o", str(Path(tmp) / "r"), *argv], cwd, dict(env0), timeout=300)
            if rc == 0:
                runs["ncu"].append(t)
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    row = {"project": str(project.relative_to(REPO)) if project.is_relative_to(REPO) else str(project),
           "harness": list(argv), "sampling_period": config.profile.sampling_period, "repeat": repeat,
           "median_s": med, "runs": runs, "facts": facts, "failures": failures, "logs": logs}
    for k in (*variants, "cold"):
        if k in med and "bare" in med:
            row[f"{k}_over_bare"] = med[k] / med["bare"]
        if k in med and "ncu" in med:
            row[f"ncu_over_{k}"] = med["ncu"] / med[k]
    return row


def case_units(case: Path, out_dir: Path) -> dict:
    """A kernels/ case profiled once with ``remeasure``: the units measured."""
    config = load(case)
    build(config).check()
    gpa = [sys.executable, "-m", "gpa_lsp.commands.profile", str(case), "--no-build"]
    bundle = out_dir / f"{case.name}.gpabundle"
    bundle.unlink(missing_ok=True)
    (Path(config.resolve(".gpa")) / throughput_cache.FILE).unlink(missing_ok=True)
    t, rc, text = _timed([*gpa, "--out", str(bundle)], REPO, {"PYTHONPATH": str(REPO)})
    return {"remeasure": {"wall_s": round(t, 3), "rc": rc,
                          **(_bundle_facts(bundle) if rc == 0 else {"log": text[-3000:]})}}


def startup(before: Path | None) -> dict:
    """Python's share: the interpreter, the profile command's imports, the gpa dispatcher's."""
    out: dict[str, list[float]] = {}
    trees = [("new", REPO)] + ([("before", before)] if before else [])
    for _ in range(5):
        for label, tree in trees:
            for what, argv in (("python", [sys.executable, "-c", "pass"]),
                               ("import_profile", [sys.executable, "-c", "import gpa_lsp.commands.profile"]),
                               ("gpa_profile_help", [sys.executable, "-m", "gpa_lsp.cli", "profile", "--help"])):
                t, rc, _ = _timed(argv, tree, {"PYTHONPATH": str(tree)})
                if rc == 0:
                    out.setdefault(f"{label}:{what}", []).append(round(t, 4))
    got = {k: {"median_s": statistics.median(v), "runs": v} for k, v in out.items()}
    for label, tree in trees:    # which package each label imported (an installed one could shadow PYTHONPATH)
        _, _, text = _timed([sys.executable, "-c", "import gpa_lsp; print(gpa_lsp.__file__)"], tree,
                            {"PYTHONPATH": str(tree)})
        got[f"{label}:package"] = text.strip()
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("projects", nargs="*", default=[str(HERE / p) for p in DEFAULT_PROJECTS])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ncu-repeat", type=int, default=1)
    ap.add_argument("--before", help="a tree holding the gpa_lsp package to compare with")
    ap.add_argument("--cases", nargs="*", default=[])
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS),
                    help=f"of before, remeasure, default, sampling, drain20, hw<MB>, worker<ms> "
                         f"(default: {' '.join(VARIANTS)})")
    ap.add_argument("--json")
    args = ap.parse_args()
    before = Path(args.before).resolve() if args.before else None
    cupti = find_cupti()
    injection_library(cupti)
    rows: list[dict] = []
    out = {"device": _device(), "cupti": {"library": str(cupti.library), "api_version": cupti.api_version},
           "date": time.strftime("%Y-%m-%d"), "rows": rows, "cases": {}}

    def save():
        if args.json:   # after each step: a run stopped at its time limit keeps what it has
            Path(args.json).write_text(json.dumps(out, indent=1))

    out["startup"] = startup(before)
    save()
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.projects:
            row = bench(Path(p).resolve(), args.repeat, args.ncu_repeat, Path(tmp), before, tuple(args.variants))
            rows.append(row)
            save()
            m = row["median_s"]
            print(f"{row['project']}: " + " | ".join(f"{k} {v:.2f} s" for k, v in m.items())
                  + f" | failures {len(row['failures'])}", flush=True)
        for c in args.cases:
            out["cases"][Path(c).name] = case_units(Path(c).resolve(), Path(tmp))
            save()
            print(c, {k: (v["wall_s"], v["rc"], v.get("units")) for k, v in out["cases"][Path(c).name].items()},
                  flush=True)
    return 0


def _device() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_mode", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
