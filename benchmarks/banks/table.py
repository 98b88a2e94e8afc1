#!/usr/bin/env python3
"""Reduce the device call's raw output (benchmarks/divergence/device.sh) to the committed tables.

    python3 benchmarks/banks/table.py RAW_DIR

Writes benchmarks/banks/ncu.h100.json: per ncu'd configuration its shared-memory counters (raw
page), and per shared access of the source-page runs ncu's executed, predicated-on threads,
N-Way, wavefronts and ideal wavefronts: what "L1 Conflicts Shared N-Way" means when warps are
predicated off. Copies items.h100.jsonl and banks.h100.jsonl next to their probes.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smsp__inst_executed.sum",
           "gpu__time_duration.sum")
SOURCE = ("Instructions Executed", "Predicated-On Thread Instructions Executed", "L1 Conflicts Shared N-Way",
          "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal", "L1 Wavefronts Shared Excessive")


def raw_page(text: str) -> list[dict]:
    out, cfg = [], None
    for block in re.split(r"^== ", text, flags=re.M):
        if not block.strip():
            continue
        head, _, rest = block.partition("\n")
        cfg = dict(kv.split("=") for kv in head.split())
        lines = [ln for ln in rest.splitlines() if ln.startswith('"')]
        rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
        data = [r for r in rows if r.get("ID", "").isdigit()]
        if data:
            out.append({"config": {k: int(v) for k, v in cfg.items()},
                        **{m: float(data[0][m].replace(",", "")) for m in METRICS if m in data[0]}})
    return out


def source_page(path: Path) -> list[dict]:
    rows = list(csv.reader(path.read_text().splitlines()))
    head = rows[1]
    ix = {k: head.index(k) for k in ("Source", *SOURCE)}
    out = []
    for r in rows[2:]:
        if len(r) > 5 and re.search(r"\b(LDS|STS)\b", r[ix["Source"]]):
            out.append({"sass": r[ix["Source"]].strip(), **{k: int(r[ix[k]]) for k in SOURCE}})
    return out


def main(raw: str) -> int:
    d = Path(raw)
    table = {"device": (d / "device.txt").read_text().strip(), "raw": raw_page((d / "banks_ncu.csv").read_text()),
             "source": {p.stem.replace("banks_source_", ""): source_page(p) for p in sorted(d.glob("banks_source_*.csv"))}}
    (HERE / "ncu.h100.json").write_text(json.dumps(table, indent=1) + "\n")
    shutil.copy(d / "banks.h100.jsonl", HERE / "banks.h100.jsonl")
    shutil.copy(d / "items.h100.jsonl", HERE.parent / "divergence" / "items.h100.jsonl")
    print(f"{len(table['raw'])} ncu configurations, {sum(len(v) for v in table['source'].values())} source rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
