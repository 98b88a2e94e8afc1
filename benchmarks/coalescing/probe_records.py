"""What record.sh / record_probe.sh wrote for one probe, read for the table*.py scripts that turn it
into ``gpa_lsp/data/coalescing.json``; the ncu metrics those tables keep, named once.

A probe's recording, in RECORDED_DIR: ``NAME_list.txt`` (one configuration a line, in launch order:
its name, then ``key=value`` fields), ``NAME_times.txt`` (the same lines with ``median_ms=`` of the
timed runs, no profiler), ``NAME_ncu.csv`` (one ncu pass, ``--page raw``: the n-th launch is the
n-th line of the list) and ``device.txt`` (nvidia-smi's name, driver). record.sh's coalescing probe
writes them without the ``NAME_`` prefix.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.profile.throughput import UNITS, parse_raw_csv  # noqa: E402

TABLE = ROOT / "gpa_lsp" / "data" / "coalescing.json"

LD_SECTORS, LD_REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS, ST_REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
L2_SECTORS = "lts__t_sectors_srcunit_tex.sum"            # the sectors L1 asked of L2
L1_HIT = "l1tex__t_sector_hit_rate.pct"
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
THREAD_INST, INST = "smsp__thread_inst_executed.sum", "smsp__inst_executed.sum"


def fields(line: str, first: str) -> dict[str, str]:
    """A list or times line: ``{first: its name, key: value, ...}``."""
    name, *rest = line.split()
    out = {first: name}
    for kv in rest:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


@dataclass
class Recorded:
    device: str                                   # the GPU's name
    configs: list[dict[str, str]]                 # the list's lines, ``fields``
    launches: list[tuple[str, dict[str, float]]]  # ncu's, one a configuration, in the same order
    timed: dict[tuple[str, ...], float]           # the key fields' values -> the timed median (ms)
    key: tuple[str, ...]

    def median_ms(self, config: dict[str, str]) -> float | None:
        return self.timed.get(tuple(config[k] for k in self.key))


def read(recorded: Path, name: str | None, *, first: str, key: tuple[str, ...]) -> Recorded:
    """The recording of probe ``name`` (None: record.sh's unprefixed files); each line's name is
    field ``first``, and a configuration's timed median is found by the values of ``key``."""
    prefix = f"{name}_" if name else ""
    configs = [fields(l, first) for l in (recorded / f"{prefix}list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / f"{prefix}times.txt").read_text().splitlines():
        if l.strip():
            f = fields(l, first)
            timed[tuple(f[k] for k in key)] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / f"{prefix}ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in {prefix}ncu.csv for {len(configs)} configurations")
    device = (recorded / "device.txt").read_text().split(",")[0].strip()
    return Recorded(device, configs, launches, timed, key)


def per_request(m: dict[str, float], sectors: str = LD_SECTORS, requests: str = LD_REQUESTS) -> float | None:
    """Sectors per request (global loads unless named), None without requests."""
    return round(m[sectors] / m[requests], 3) if m.get(requests) else None


def unit_shares(m: dict[str, float]) -> dict[str, float | None]:
    """``{unit}_pct``: each unit's share of its sustained peak (throughput.UNITS)."""
    return {f"{u}_pct": m.get(metric) for u, metric in UNITS.items()}


def add_to_table(out: Path, device: str, key: str, about: str, rows: list[dict]) -> None:
    """Put ``rows`` under ``devices.<device>.<key>`` of the table at ``out`` (its ``about_<key>``:
    ``about``), the rest kept, and say so."""
    doc = json.loads(out.read_text())
    doc[f"about_{key}"] = about
    doc["devices"].setdefault(device, {})[key] = rows
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{out}: {len(rows)} {key} configurations on {device}")
