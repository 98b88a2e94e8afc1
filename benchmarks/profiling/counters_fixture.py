"""Write tests/profile/fixtures/counters.h100.json.gz from a device run of counters_vs_ncu.py.

    python3 benchmarks/profiling/counters_fixture.py CASES.json [--same-session SAME.json] --note TEXT

``CASES.json``: counters_vs_ncu.py on every kernels/ case (the fixture's ``cases``, replaced whole);
``SAME.json``: counters_vs_ncu.py ``--ncu`` on a few cases, kept as ``same_session_amounts`` (the
counters run and the ncu pass in one session, to compare the launch's amounts). The fixture's
``same_session_ncu`` (an earlier session's unit shares) is kept as it is. Standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/profile/fixtures/counters.h100.json.gz"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--same-session")
    ap.add_argument("--note", required=True)
    ap.add_argument("--device", default="NVIDIA H100 80GB HBM3, driver 580.159.04, CUPTI 13.0.1 (torch venv wheel)")
    args = ap.parse_args()
    doc = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    cases = json.loads(Path(args.cases).read_text())
    bad = [c for c, row in cases.items() if "counters_txt" not in row]
    if bad:
        sys.exit(f"cases without a counters run: {bad}")
    names = sorted({m for row in cases.values() for m in re.findall(r"^N \d+ \d+ (\S+)$", row["counters_txt"], re.M)})
    passes = sorted({int(p) for row in cases.values() for p in re.findall(r"^G \d+ (\d+) ", row["counters_txt"], re.M)})
    doc["cases"] = cases
    doc["metrics"] = f"{len(names)} ({', '.join(names)}), {'/'.join(map(str, passes))} passes"
    doc["device"] = args.device
    doc["notes"] = [args.note]
    doc["recorded_by"] = "benchmarks/profiling/counters_vs_ncu.py (scripts/gpu/counters_amounts.sh)"
    if args.same_session:
        doc["same_session_amounts"] = json.loads(Path(args.same_session).read_text())
    FIXTURE.write_bytes(gzip.compress(json.dumps(doc, indent=1, sort_keys=True).encode(), mtime=0))
    print(f"{FIXTURE}: {len(cases)} case(s), {doc['metrics']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
