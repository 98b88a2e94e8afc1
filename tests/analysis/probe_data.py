"""The real Nsight Compute export of shared/samples/probe.cu as a Profile (test data loader).

Rows of ``--page source --print-source sass --csv``: a "Kernel Name" row, a
header row, one row per SASS instruction with absolute addresses.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from gpa_lsp.profile.model import Device, Kernel, Launch, PCStats, Profile
from gpa_lsp.profile.reasons import parse

DATA = Path(__file__).resolve().parent / "data"
# shared/samples/probe.cu, as the profiling benchmark and the collector fixtures use it (one copy)
PROBE_CU = Path(__file__).resolve().parents[2] / "benchmarks" / "profiling" / "probe" / "probe.cu"
PROBE_CSV = DATA / "probe.h100.ncu-source-sass.csv.gz"    # recorded on an H100 (ncu 2025.3.1)


def _int(v: str) -> int:
    v = v.strip().replace(",", "")
    return int(float(v)) if v and v not in ("-", "") else 0


def read_ncu_source_csv(path: Path) -> dict[str, list[dict]]:
    """kernel (demangled signature) -> rows with 'offset', 'source', 'stalls', 'not_issued', counters."""
    out: dict[str, list[dict]] = {}
    kernel = None
    header = None
    base = None
    import gzip
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as fh:
        for row in csv.reader(fh):
            if not row:
                continue
            if row[0] == "Kernel Name":
                kernel, header, base = row[1], None, None
                out[kernel] = []
                continue
            if row[0] == "Address":
                header = row
                continue
            if header is None or kernel is None:
                continue
            rec = dict(zip(header, row))
            addr = int(rec["Address"], 16)
            base = addr if base is None else base
            stalls: dict[str, int] = {}
            ni: dict[str, int] = {}
            for col, val in rec.items():
                got = parse(col) if col.startswith("stall_") else None
                if got is None:
                    continue
                n = _int(val)
                if n:
                    (ni if got[1] else stalls)[got[0]] = (ni if got[1] else stalls).get(got[0], 0) + n
            out[kernel].append({
                "offset": addr - base, "source": rec["Source"].strip(), "stalls": stalls, "not_issued": ni,
                "executed": _int(rec.get("Instructions Executed", "")),
                "thread_executed": _int(rec.get("Thread Instructions Executed", "")),
                "sectors": _int(rec.get("L2 Theoretical Sectors Global", "")),
                "ideal": _int(rec.get("L2 Theoretical Sectors Global Ideal", "")),
                "conflicts": _int(rec.get("L1 Conflicts Shared N-Way", "")),
            })
    return out


def normalized_sass(text: str) -> str:
    """SASS text without .reuse flags, branch-target spelling and spacing (ncu prints absolute targets)."""
    s = text.replace(" ;", "").strip().rstrip(";").replace(".reuse", "")
    s = re.sub(r"`\(\.L_x_\d+\)", "TARGET", s)
    s = re.sub(r"0x7f[0-9a-f]{8,}", "TARGET", s)
    return re.sub(r"\s+", " ", s).strip()


def probe_profile(program, csv_path: Path = PROBE_CSV) -> Profile:
    """The CSV's samples joined to ``program`` (the probe cubin built here) by kernel name and offset."""
    rows = read_ncu_source_csv(csv_path)
    kernels, pcs = [], []
    for f in program.functions:
        if not f.entry:
            continue
        short = (f.demangled or f.name).split("(")[0]
        match = next((k for k in rows if k.split("(")[0] == short), None)
        if match is None:
            continue
        kernels.append(Kernel(f.name, match, program.cubin_sha256,
                              launches=(Launch((16384, 1, 1), (256, 1, 1), registers=f.registers),) * 3))
        for r in rows[match]:
            if not r["stalls"]:
                continue
            pcs.append(PCStats(program.cubin_sha256, f.name, r["offset"], tuple(sorted(r["stalls"].items())),
                               tuple(sorted(r["not_issued"].items())), executed=r["executed"] or None,
                               thread_executed=r["thread_executed"] or None,
                               sectors=r["sectors"] or None, ideal_sectors=r["ideal"] or None,
                               bank_conflicts=r["conflicts"] or None))
    device = Device(name="NVIDIA H100 80GB HBM3", sm=90, sm_count=132)
    return Profile("ncu", device, tuple(kernels), tuple(pcs), total_samples=sum(p.total for p in pcs))
