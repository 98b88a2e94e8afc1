"""What the GPU check costs gpa's process: the whole check (``cuInit``) against the look that trusts a
driver that passed before (gpu_check.require_gpu), each in a fresh process, 5 times.

    PYTHONPATH=. python3 benchmarks/profiling/gpu_check_cost.py [--json OUT]

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
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import time, os
t = time.perf_counter()
from gpa_lsp.profile import gpu_check
t1 = time.perf_counter()
{call}
print(json.dumps({{"import_s": t1 - t, "check_s": time.perf_counter() - t1}}))
"""
CALLS = {"whole check (cuInit)": "gpu_check.driver_status()",
         "require_gpu, first (no pass kept)": "gpu_check.require_gpu('cupti')",
         "require_gpu, a pass kept": "gpu_check.require_gpu('cupti')"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(5):
            for name, call in CALLS.items():
                if "first" in name:
                    (Path(tmp) / "gpa-lsp" / "driver-check.json").unlink(missing_ok=True)
                code = "import json\n" + PROBE.format(call=call)
                r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                                   env={**os.environ, "PYTHONPATH": str(REPO), "GPA_CACHE_DIR": tmp})
                got = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {"error": r.stderr[-500:]}
                out.setdefault(name, {"runs": []})["runs"].append(got)
    for name, row in out.items():
        xs = [r["check_s"] for r in row["runs"] if "check_s" in r]
        row["median_check_s"] = statistics.median(xs) if xs else None
        print(f"{name}: {row['median_check_s']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
