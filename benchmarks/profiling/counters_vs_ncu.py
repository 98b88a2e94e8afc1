"""Record CUPTI's unit throughput (the injection library's counters run) on every kernels/ case.

    PYTHONPATH=. python3 benchmarks/profiling/counters_vs_ncu.py OUT.json [CASE_DIR ...] [--ncu]

For each case with a recorded ``recorded/cupti.gpabundle`` (whose unit throughput ncu measured,
``--clock-control none``, one launch), build the case and run its harness once in counters mode
for the bundle's sampled kernels, as ``gpa profile`` does; keep the library's raw output
(``cupti.txt``) and the wall time. ``--ncu`` also runs the ``ncu --metrics`` pass in the same
session and keeps its units, for a same-session comparison. tests/profile/test_counters.py
compares the two on the saved output. Needs a GPU; standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gpa_lsp.build import build  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.errors import GpaError  # noqa: E402
from gpa_lsp.profile.bundle import read_bundle  # noqa: E402
from gpa_lsp.profile.collect import _throughput_cupti, _throughput_ncu  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--ncu", action="store_true")
    args = ap.parse_intermixed_args()
    cases = [Path(c).resolve() for c in args.cases] or sorted(
        p.parent.parent for p in (REPO / "kernels").glob("*/recorded/cupti.gpabundle"))

    def built(case: Path):
        try:
            return case, build(load(case)).check().output, None
        except GpaError as exc:
            return case, None, exc.message

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=min(12, os.cpu_count() or 4)) as pool:
        builds = list(pool.map(built, cases))
    print(f"built {len(builds)} case(s) in {time.monotonic() - t0:.1f} s", flush=True)
    out = {}
    for case, exe, err in builds:
        name = case.name
        if err:
            out[name] = {"error": err}
            continue
        config = load(case)
        profile = read_bundle(case / "recorded" / "cupti.gpabundle").profile
        with tempfile.TemporaryDirectory() as keep:
            os.environ["GPA_KEEP_CUPTI_OUT"] = keep
            t = time.monotonic()
            _, note = _throughput_cupti(config, profile, exe, log=lambda m: None)
            wall = time.monotonic() - t
            text = (Path(keep) / "counters.txt").read_text() if (Path(keep) / "counters.txt").exists() else ""
            os.environ.pop("GPA_KEEP_CUPTI_OUT")
        row = {"counters_txt": text, "wall_s": round(wall, 3), "note": note}
        if args.ncu:
            t = time.monotonic()
            got, nnote = _throughput_ncu(config, profile, exe, log=lambda m: None)
            row["ncu_wall_s"] = round(time.monotonic() - t, 3)
            row["ncu_note"] = nnote
            row["ncu"] = {k.name: k.throughput.to_json() for k in got.kernels if k.throughput}
        out[name] = row
        print(f"{name}: counters run {wall:.2f} s, {text.count(chr(10) + 'U ')} launch(es) measured"
              f"{', ' + note if note else ''}", flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True))   # each case: a run cut short keeps them
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
