"""What record.sh / record_probe.sh wrote for one probe, read for the table*.py scripts that turn it
into ``gpa_lsp/data/coalescing.json``; the ncu metrics those tables keep, named once.

A probe's recording, in RECORDED_DIR: ``NAME_list.txt`` (one configuration a line, in launch order:
its name, then ``key=value`` fields), ``NAME_times.txt`` (the same lines with ``median_ms=`` of the
timed runs, no profiler), ``NAME_ncu.csv`` (one ncu pass, ``--page raw``: the n-th launch is the
n-th line of the list) and ``device.txt`` (nvidia-smi's name, driver). record.sh's coalescing probe
writes them without the ``NAME_`` prefix. A recording made on another device than the H100's is kept
beside them in ``recorded/`` as ``NAME_TAG_*`` (record.sh's: ``walk_TAG_*``) with its own
``NAME_TAG_device.txt``, e.g. TAG ``h200``; the table scripts read it with ``--device TAG`` and add
its rows under the device name that file gives (``add_to_table``), the other devices' kept.
"""

from __future__ import annotations

import argparse
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


def arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The table scripts' common arguments: RECORDED_DIR, ``--device TAG`` and ``--out``."""
    ap.add_argument("recorded", type=Path)
    ap.add_argument("--device", metavar="TAG", help="read the recording of another device kept as NAME_TAG_* "
                    "with its NAME_TAG_device.txt (e.g. h200); default: the H100's files")
    ap.add_argument("--out", type=Path, default=TABLE)
    return ap


def file_prefix(name: str | None, device: str | None) -> str:
    """The prefix of probe ``name``'s files (None: record.sh's coalescing probe, ``walk`` when tagged)
    recorded on device ``device`` (a tag, None: the H100's)."""
    stem = "_".join(p for p in (name or ("walk" if device else None), device) if p)
    return f"{stem}_" if stem else ""


def read(recorded: Path, name: str | None, *, first: str, key: tuple[str, ...], device: str | None = None) -> Recorded:
    """The recording of probe ``name`` (None: record.sh's unprefixed files) on device ``device``
    (a tag: ``NAME_TAG_*`` and ``NAME_TAG_device.txt``; None: the H100's files and ``device.txt``);
    each line's name is field ``first``, and a configuration's timed median is found by the values
    of ``key``."""
    pre = file_prefix(name, device)
    configs = [fields(l, first) for l in (recorded / f"{pre}list.txt").read_text().splitlines() if l.strip()]
    timed = {}
    for l in (recorded / f"{pre}times.txt").read_text().splitlines():
        if l.strip():
            f = fields(l, first)
            timed[tuple(f[k] for k in key)] = float(f["median_ms"])
    launches = parse_raw_csv((recorded / f"{pre}ncu.csv").read_text(), wanted=None)
    if len(launches) != len(configs):
        raise SystemExit(f"{len(launches)} launches in {pre}ncu.csv for {len(configs)} configurations")
    gpu = (recorded / (f"{pre}device.txt" if device else "device.txt")).read_text().split(",")[0].strip()
    return Recorded(gpu, configs, launches, timed, key)


def per_request(m: dict[str, float], sectors: str = LD_SECTORS, requests: str = LD_REQUESTS) -> float | None:
    """Sectors per request (global loads unless named), None without requests."""
    return round(m[sectors] / m[requests], 3) if m.get(requests) else None


def unit_shares(m: dict[str, float]) -> dict[str, float | None]:
    """``{unit}_pct``: each unit's share of its sustained peak (throughput.UNITS)."""
    return {f"{u}_pct": m.get(metric) for u, metric in UNITS.items()}


def add_to_table(out: Path, device: str, about: tuple[str, str], entries: dict) -> None:
    """Put ``entries`` (probe key -> rows) under ``devices.<device>`` of the table at ``out`` (a new
    table when there is none), and ``about`` (key, text) at its top, the rest kept: other devices'
    rows and other probes'. Says what it added."""
    doc = json.loads(out.read_text()) if out.is_file() else {}
    doc[about[0]] = about[1]
    doc.setdefault("devices", {}).setdefault(device, {}).update(entries)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    got = ", ".join(f"{len(rows)} {key}" for key, rows in entries.items() if isinstance(rows, list))
    print(f"{out}: {got} configurations on {device}")
