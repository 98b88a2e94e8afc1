"""Collector 2: Nsight Compute. Run the harness under ``ncu``, export, convert to a Profile.

ncu replays each profiled launch to collect SourceCounters (per-instruction
samples, executed counts, sectors, bank conflicts, divergent branches),
WarpStateStats, LaunchStats and Occupancy, so it is exact but slow; the
launches are trimmed per kernel (``[profile] launch_count``). The report is
exported on the GPU machine (``--page source --print-source sass --csv`` and
``--page details --csv``) because importing it needs ncu's own libraries.
Addresses in the export are absolute: a kernel's offsets are its addresses
minus its first address. Standard library only.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .. import procs
from ..errors import ProfilingError
from . import cubins as elf
from .demangle import base_name, demangle_all
from .harness import no_samples_error, privileges_error
from .model import Device, Kernel, Launch, PCStats, Profile
from .reasons import parse as parse_reason
from .throughput import METRICS

SECTIONS = ("SourceCounters", "WarpStateStats", "LaunchStats", "Occupancy", "SpeedOfLight")

_NUMERIC = {
    "Instructions Executed": "executed",
    "Thread Instructions Executed": "thread_executed",
    "L2 Theoretical Sectors Global": "sectors",
    "L2 Theoretical Sectors Global Ideal": "ideal_sectors",
    "L1 Conflicts Shared N-Way": "bank_conflicts",
    "Divergent Branches": "divergent_branches",
}


@dataclass
class SourceBlock:
    """One profiled launch in the source page: its kernel and per-address rows."""

    kernel: str
    rows: list[dict[str, str]] = field(default_factory=list)


def _num(v: str | None) -> int | None:
    if v is None:
        return None
    v = v.strip().replace(",", "")
    if not v or v in ("-", "n/a", "N/A"):
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return int(round(float(v)))
        except ValueError:
            return None


def parse_source_csv(text: str) -> list[SourceBlock]:
    """Blocks of ``ncu --page source --print-source sass --csv``, one per profiled launch."""
    blocks: list[SourceBlock] = []
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            blocks.append(SourceBlock(kernel=row[1] if len(row) > 1 else "?"))
            header = None
            continue
        if not blocks:
            continue
        if header is None:
            header = row
            continue
        blocks[-1].rows.append(dict(zip(header, row)))
    # ncu 2025.3 prints every launch's block twice in a row; count each launch once
    unique: list[SourceBlock] = []
    for b in blocks:
        if unique and unique[-1].kernel == b.kernel and unique[-1].rows == b.rows:
            continue
        unique.append(b)
    return unique


@dataclass
class LaunchDetails:
    id: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)   # name -> (unit, value)
    device: str = ""
    cc: str = ""


def _dims(v: str) -> tuple[int, int, int]:
    nums = [int(x) for x in re.findall(r"\d+", v or "")]
    nums = (nums + [1, 1, 1])[:3]
    return (nums[0], nums[1], nums[2])


def parse_details_csv(text: str) -> list[LaunchDetails]:
    """``ncu --page details --csv``: one LaunchDetails per profiled launch, in order."""
    out: dict[str, LaunchDetails] = {}
    for row in csv.DictReader(io.StringIO(text)):
        lid = row.get("ID")
        if lid is None or not row.get("Kernel Name"):
            continue
        d = out.get(lid)
        if d is None:
            d = out[lid] = LaunchDetails(id=lid, kernel=row["Kernel Name"], grid=_dims(row.get("Grid Size", "")),
                                         block=_dims(row.get("Block Size", "")), device=row.get("Device", ""),
                                         cc=row.get("CC", ""))
        if row.get("Metric Name"):
            d.metrics[row["Metric Name"]] = (row.get("Metric Unit", ""), row.get("Metric Value", ""))
    return list(out.values())


_TIME = {"nsecond": 1, "ns": 1, "usecond": 1_000, "us": 1_000, "msecond": 1_000_000, "ms": 1_000_000,
         "second": 1_000_000_000, "s": 1_000_000_000}
_BYTES = {"byte": 1, "Kbyte": 1000, "KB": 1000, "Mbyte": 1_000_000, "KiB": 1024, "bytes": 1}


def _metric(d: LaunchDetails, name: str, scale: Mapping[str, int] | None = None) -> int | None:
    if name not in d.metrics:
        return None
    unit, value = d.metrics[name]
    unit = unit.split("/", 1)[0]   # "byte/block" -> "byte"
    try:
        x = float(value.replace(",", ""))
    except ValueError:
        return None
    return int(round(x * (scale.get(unit, 1) if scale else 1)))


def _resolve(name: str, n_rows: int, funcs: Mapping[str, tuple[str, int]], dem: Mapping[str, str]) -> str | None:
    """The mangled function (a key of ``funcs``) an ncu kernel name refers to."""
    if name in funcs:
        return name
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    exact = [f for f in funcs if squash(dem.get(f, f)) == squash(name)]
    if len(exact) == 1:
        return exact[0]
    base = base_name(name)
    same = [f for f in funcs if base_name(dem.get(f, f)) == base]
    if len(same) > 1:
        sized = [f for f in same if funcs[f][1] == 16 * n_rows]
        same = sized or same
    return same[0] if same else None


def convert(source_csv: str, details_csv: str, cubins: Mapping[str, bytes], *, device: Device | None = None,
            kernels: Sequence[str] = ()) -> tuple[Profile, dict[str, bytes], list[str]]:
    """(Profile, the cubins it refers to, notes) from the two exports and the program's cubins (sha -> bytes)."""
    notes: list[str] = []
    funcs: dict[str, tuple[str, int]] = {}       # mangled -> (cubin sha, size)
    for sha, data in cubins.items():
        for fname, size in elf.functions(data).items():
            funcs.setdefault(fname, (sha, size))
    dem = demangle_all(funcs)
    blocks = parse_source_csv(source_csv)
    details = parse_details_csv(details_csv) if details_csv else []

    acc_all: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    acc_ni: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    acc_num: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    resolved: dict[str, str] = {}
    for block in blocks:
        if not block.rows:
            continue
        fname = resolved.get(block.kernel) or _resolve(block.kernel, len(block.rows), funcs, dem)
        if fname is None:
            notes.append(f"no cubin defines kernel {block.kernel!r}; its samples are left out")
            continue
        resolved[block.kernel] = fname
        base_addr = min(int(r["Address"], 16) for r in block.rows if r.get("Address"))
        size = funcs[fname][1]
        for r in block.rows:
            if not r.get("Address"):
                continue
            off = int(r["Address"], 16) - base_addr
            if size and off >= size:
                notes.append(f"{fname}: address offset {off:#x} beyond the function ({size:#x} bytes)")
                continue
            key = (fname, off)
            for col, val in r.items():
                if col is None:
                    continue
                got = parse_reason(col)
                if got:
                    n = _num(val)
                    if n:
                        (acc_ni if got[1] else acc_all)[key][got[0]] += n
                elif col in _NUMERIC:
                    n = _num(val)
                    if n is not None:
                        acc_num[key][_NUMERIC[col]] = acc_num[key].get(_NUMERIC[col], 0) + n
            acc_all[key]  # every instruction gets a record (executed counts matter without samples)

    launches: dict[str, list[Launch]] = defaultdict(list)
    dev_name = ""
    for d in details:
        fname = resolved.get(d.kernel) or _resolve(d.kernel, 0, funcs, dem)
        if fname is None:
            continue
        dev_name = dev_name or d.device
        launches[fname].append(Launch(
            grid=d.grid, block=d.block,
            dynamic_shared=_metric(d, "Dynamic Shared Memory Per Block", _BYTES) or 0,
            registers=_metric(d, "Registers Per Thread") or 0,
            static_shared=_metric(d, "Static Shared Memory Per Block", _BYTES) or 0,
            duration_ns=_metric(d, "Duration", _TIME)))

    names = {f for f, _ in acc_all} | set(launches)
    keep = {n for n in names if not kernels or any(k in n or k in dem.get(n, n) for k in kernels)}
    pcs = tuple(
        PCStats(cubin=funcs[f][0], function=f, offset=off, stalls=tuple(sorted(acc_all[(f, off)].items())),
                not_issued=tuple(sorted(acc_ni[(f, off)].items())), **acc_num.get((f, off), {}))
        for (f, off) in sorted(acc_all) if f in keep)
    kern = tuple(Kernel(name=f, demangled=dem.get(f, f), cubin=funcs[f][0], launches=tuple(launches.get(f, ())))
                 for f in sorted(keep))
    if device is None:
        device = Device(name=dev_name or "unknown", sm=0, sm_count=0)
    total = sum(p.total for p in pcs)
    profile = Profile(collector="ncu", device=device, kernels=kern, pcs=pcs, total_samples=total)
    used = {k.cubin for k in kern}
    return profile, {k: v for k, v in cubins.items() if k in used}, notes


def kernels_without_cubin(source_csv: str, cubins: Mapping[str, bytes]) -> list[str]:
    """The profiled kernels (source page blocks with rows) that no cubin of ``cubins`` defines."""
    funcs: dict[str, tuple[str, int]] = {}
    for sha, data in cubins.items():
        for fname, size in elf.functions(data).items():
            funcs.setdefault(fname, (sha, size))
    dem = demangle_all(funcs)
    return sorted({b.kernel for b in parse_source_csv(source_csv)
                   if b.rows and _resolve(b.kernel, len(b.rows), funcs, dem) is None})


# ---------------------------------------------------------------- running ncu

def launch_filter(kernels: Sequence[str], launch_count: int) -> list[str]:
    """ncu arguments that bound the profiled launches.

    ncu has no per-kernel launch limit (``--kernel-id``'s invocation is one
    number), so the total is bounded instead: ``launch_count`` per named
    kernel, or per kernel of a typical harness (8) when all are profiled.
    """
    argv: list[str] = []
    if kernels:
        argv += ["--kernel-name", "regex:" + "|".join(re.escape(k) for k in kernels)]
    argv += ["--launch-count", str(launch_count * (len(kernels) if kernels else 8))]
    return argv


def throughput_argv(kernels: Sequence[str], launch_count: int = 1) -> list[str]:
    """ncu arguments for the throughput pass (after the ncu executable; before ``-o`` and the command);
    the launches are bounded as for the ncu collector (``launch_filter``)."""
    return ["--metrics", ",".join(METRICS), "--clock-control", "none", "--print-summary", "none",
            *launch_filter(kernels, launch_count)]


def ncu_argv(ncu: str, report: str | Path, *, kernels: Sequence[str] = (), launch_count: int = 5) -> list[str]:
    argv = [ncu]
    for s in SECTIONS:
        argv += ["--section", s]
    # unit throughput for the memory-system bound; at the application's clocks, like CUPTI's samples
    argv += ["--metrics", ",".join(METRICS), "--clock-control", "none"]
    argv += ["--print-summary", "none", "-f", "-o", str(report)]
    argv += launch_filter(kernels, launch_count)
    return argv


def export(ncu: str, report: str | Path, page: str, *, timeout: float = 600,
           cancel: threading.Event | None = None) -> str:
    argv = [ncu, "--import", str(report), "--page", page, "--csv", "--print-kernel-base", "mangled"]
    if page == "source":
        argv += ["--print-source", "sass"]
    if page == "raw":
        argv += ["--print-units", "base"]
    try:
        proc = procs.run_tool(argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProfilingError(f"ncu did not export the {page} page of {Path(report).name} within {timeout:.0f} s "
                             "and was stopped", "export it by hand with `ncu --import`, or profile fewer launches") from None
    if proc.returncode != 0:
        raise ProfilingError(f"ncu could not export the {page} page of {Path(report).name}: "
                             f"{(proc.stderr or proc.stdout).strip()[-500:]}", "check the ncu version (2023.1 or newer)")
    return proc.stdout


def explain_empty(output: str, kernels: Sequence[str]) -> ProfilingError:
    if "ERR_NVGPUCTRPERM" in output:
        return privileges_error("ncu", "ERR_NVGPUCTRPERM")
    if "No kernels were profiled" in output:
        return no_samples_error("ncu", output, kernels_filter=kernels, kernels_seen=[] if not kernels else ["?"])
    return no_samples_error("ncu", output, kernels_filter=kernels)
