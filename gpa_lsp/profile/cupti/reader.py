"""Turn the injection library's output folder (``cupti.txt`` + ``cubin_<crc>.cubin``) into a Profile.

PC records are summed per (cubin, function, offset) across flushes and
contexts; stall reason indices are resolved with each context's own table
(indices differ by chip). Kernels are the launched ones plus any function
that has samples; cubins are keyed by sha256 like the bundle. Standard
library only: this runs on the GPU machine.

Launches come from two records joined by CUPTI's correlation id: ``L`` (the
driver API callback: grid, block, dynamic shared memory as the program asked)
and ``K`` (the kernel activity record: start/end, registers per thread,
static shared memory). A ``K`` without its ``L`` (a graph launch, say) is a
launch too; an ``L`` without its ``K`` (format 1, or activity tracing that
failed) keeps registers 0 and no duration.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ...errors import ProfilingError
from .. import cubins as elf
from ..demangle import demangle_all
from ..harness import no_samples_error, privileges_error
from ..model import Device, Kernel, Launch, PCStats, Profile
from ..reasons import parse as parse_reason
from . import OUTPUT

MAX_LAUNCHES_PER_KERNEL = 1000


@dataclass
class CuptiRun:
    """What the injection library wrote, before it becomes a Profile."""

    profile: Profile
    cubins: dict[str, bytes]
    errors: list[str] = field(default_factory=list)
    complete: bool = True          # the END record was written (the process exited normally)
    launches_seen: dict[str, int] = field(default_factory=dict)
    hardware_buffer_full: int = 0
    cupti_version: int = 0
    format: int = 0
    kernel_records: int = 0        # K lines (kernel activity records) read
    activity_dropped: int = 0      # activity records CUPTI dropped (Y lines)
    drains: dict[str, tuple[int, int]] = field(default_factory=dict)  # ctx -> (at launch exit, periodic)
    contexts: tuple[str, ...] = ()  # the contexts that had PC sampling configured (R records)
    # kernel name -> duration (ns) of each timed launch, in launch order, for the kernels kept by the
    # filter (durations-only runs: GPA_CUPTI_NO_PCSAMPLING, see gpa_lsp/verify/dynamic.py)
    durations: dict[str, list[int]] = field(default_factory=dict)
    marks: list[tuple[str, int]] = field(default_factory=list)   # Z records: (label, ns since load)
    hw_bytes: int | None = None     # the hardware buffer the run was given (the collector sets it)
    filled_at: int = 0              # a smaller buffer that filled before this run (the collector sets it)


@dataclass
class _Rec:
    """One launch as the two records give it; ``order`` keeps the program's launch order."""

    order: tuple[int, int]
    name: str
    grid: tuple[int, int, int] = (0, 0, 0)
    block: tuple[int, int, int] = (0, 0, 0)
    dynamic_shared: int = 0
    registers: int = 0
    static_shared: int = 0
    duration_ns: int | None = None
    launched: bool = False         # an L record was seen

    def launch(self) -> Launch:
        return Launch(grid=self.grid, block=self.block, dynamic_shared=self.dynamic_shared,
                      registers=self.registers, static_shared=self.static_shared, duration_ns=self.duration_ns)


def _matches(name: str, demangled: str, filters: Sequence[str]) -> bool:
    return not filters or any(f in name or f in demangled for f in filters)


def read_output(folder: str | Path, *, kernels: Sequence[str] = (), output_tail: str = "",
                require_samples: bool = True, text: bytes | None = None) -> CuptiRun:
    """``text``: the output's records as read already (the part through END that the library
    signalled while the harness was still ending: done_signal.py); else ``cupti.txt`` is read."""
    folder = Path(folder)
    path = folder / OUTPUT
    if not path.is_file():
        if output_tail:
            err = no_samples_error("CUPTI", output_tail)
            if "saw no GPU" in err.message or "refused" in err.message:
                raise err
        raise ProfilingError("the CUPTI collector wrote nothing: the injection library was not loaded "
                             "(the harness used no CUDA, or CUDA_INJECTION64_PATH was dropped)",
                             "check that the harness runs CUDA code and keeps the environment it was given")
    reason_of: dict[str, dict[int, tuple[str, bool]]] = defaultdict(dict)
    crc_file: dict[str, str] = {}
    stalls: dict[tuple[str, str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    not_issued: dict[tuple[str, str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    recs: dict[int, _Rec] = {}          # correlation id -> launch
    uncorrelated: list[_Rec] = []        # format 1 L lines
    launch_count: dict[str, int] = defaultdict(int)
    kernel_records = activity_dropped = 0
    drains: dict[str, tuple[int, int]] = {}
    device: Device | None = None
    errors: list[str] = []
    total = dropped = hwfull = 0
    period = None
    version = fmt = 0
    complete = False
    marks: list[tuple[str, int]] = []
    for line in (path.read_bytes() if text is None else text).decode("utf-8", "replace").splitlines():
        parts = line.split(" ")
        tag = parts[0]
        try:
            if tag == "P":
                ctx, crc, off, fname = parts[1], parts[2], int(parts[3], 16), parts[4]
                key = (crc, fname, off)
                table = reason_of[ctx]
                slot_all, slot_ni = stalls[key], not_issued[key]
                for item in parts[5:]:
                    idx, n = item.split(":")
                    reason = table.get(int(idx))
                    if reason is None:
                        continue
                    name, ni = reason
                    (slot_ni if ni else slot_all)[name] += int(n)
            elif tag == "L":
                grid = (int(parts[3]), int(parts[4]), int(parts[5]))
                block = (int(parts[6]), int(parts[7]), int(parts[8]))
                if fmt >= 2:
                    corr, name = int(parts[10]), parts[11]
                    r = recs.get(corr) or recs.setdefault(corr, _Rec(order=(0, corr), name=name))
                else:
                    name, corr = (parts[10] if len(parts) > 10 else "?"), None
                    r = _Rec(order=(1, len(uncorrelated)), name=name)
                    uncorrelated.append(r)
                launch_count[name] += 1
                r.launched, r.name, r.grid, r.block = True, name, grid, block
                r.dynamic_shared = int(parts[9])
            elif tag == "K":
                corr, start, end = int(parts[2]), int(parts[3]), int(parts[4])
                kernel_records += 1
                r = recs.get(corr) or recs.setdefault(corr, _Rec(order=(0, corr), name=parts[14]))
                r.registers, r.static_shared = int(parts[5]), int(parts[6])
                if not r.launched:   # no callback for this launch: the record's own geometry
                    r.dynamic_shared = int(parts[7])
                    r.grid = (int(parts[8]), int(parts[9]), int(parts[10]))
                    r.block = (int(parts[11]), int(parts[12]), int(parts[13]))
                    r.name = parts[14]
                # start = end = 0: CUPTI could not time it
                r.duration_ns = end - start if end > start > 0 else None
            elif tag == "W":
                errors.append(f"context {parts[1]} was not sampled (launches only): CUPTI samples one context per "
                              f"device at a time, and context {parts[3]} had device {parts[2]}")
            elif tag == "Y":
                activity_dropped += int(parts[1])
            elif tag == "Q":
                drains[parts[1]] = (int(parts[2]), int(parts[3]))
            elif tag == "R":
                got = parse_reason(parts[3])
                if got:
                    reason_of[parts[1]][int(parts[2])] = got
            elif tag == "M":
                crc_file[parts[2]] = parts[5]
            elif tag == "T":
                total += int(parts[2])
                dropped += int(parts[3])
                hwfull += int(parts[5])
            elif tag == "D" and device is None:
                v = [int(x) for x in parts[2:13]]
                device = Device(name=" ".join(parts[13:]) or "unknown", sm=v[1] * 10 + v[2], sm_count=v[3],
                                warps_per_sm=max(1, v[5] // 32), clock_khz=v[4], max_blocks_per_sm=v[6],
                                registers_per_sm=v[7], shared_memory_per_sm=v[8], max_threads_per_block=v[9],
                                driver_version=str(v[10]), cuda_version=f"{v[10] // 1000}.{(v[10] % 1000) // 10}")
            elif tag == "V":
                fmt, version, period = int(parts[1]), int(parts[2]), int(parts[3])
            elif tag == "E":
                errors.append(" ".join(parts[3:]) + f" (CUPTI error {parts[2]})")
            elif tag == "Z":
                marks.append((parts[1], int(parts[2])))
            elif tag == "END":
                complete = True
        except (IndexError, ValueError):
            continue  # a line cut short by a crash
    launches: dict[str, list[Launch]] = defaultdict(list)
    for r in sorted([*recs.values(), *uncorrelated], key=lambda r: r.order):
        if not r.launched:
            launch_count[r.name] += 1   # traced by the activity API only (e.g. a graph launch)
        if len(launches[r.name]) < MAX_LAUNCHES_PER_KERNEL:
            launches[r.name].append(r.launch())
    if activity_dropped:
        errors.append(f"CUPTI dropped {activity_dropped} kernel activity record(s): some launches have no duration")
    if any("INSUFFICIENT_PRIVILEGES" in e for e in errors):
        raise privileges_error("CUPTI", next(e for e in errors if "INSUFFICIENT_PRIVILEGES" in e))

    cubin_bytes: dict[str, bytes] = {}   # sha -> bytes
    sha_of_crc: dict[str, str] = {}
    for crc, fname in crc_file.items():
        f = folder / fname
        if f.is_file():
            data = f.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            cubin_bytes[sha] = data
            sha_of_crc[crc] = sha
    crc_of_sha = {v: int(k, 16) for k, v in sha_of_crc.items()}

    names = {fn for (_, fn, _) in stalls} | set(launches)
    dem = demangle_all(names)
    kept_names = {n for n in names if _matches(n, dem[n], kernels)}

    pcs = []
    sampled_cubin: dict[str, str] = {}
    for (crc, fname, off), slot in stalls.items():
        if fname not in kept_names:
            continue
        sha = sha_of_crc.get(crc)
        if sha is None:
            errors.append(f"no cubin for CRC {crc} (function {fname}); its samples are left out")
            continue
        sampled_cubin.setdefault(fname, sha)
        pcs.append(PCStats(cubin=sha, function=fname, offset=off,
                           stalls=tuple(sorted(slot.items())), not_issued=tuple(sorted(not_issued[(crc, fname, off)].items()))))
    pcs.sort(key=lambda p: (p.cubin, p.function, p.offset))

    kernels_out = []
    for name in sorted(kept_names):
        sha = sampled_cubin.get(name) or elf.find_cubin(name, cubin_bytes)
        if sha is None:
            continue
        kernels_out.append(Kernel(name=name, demangled=dem[name], cubin=sha, cubin_crc=crc_of_sha.get(sha),
                                  launches=tuple(launches.get(name, ()))))
    used = {k.cubin for k in kernels_out}
    profile = Profile(collector="cupti", device=device or Device(name="unknown", sm=0, sm_count=0),
                      kernels=tuple(kernels_out), pcs=tuple(pcs), sampling_period=period,
                      dropped_samples=dropped, total_samples=total)
    if hwfull:
        errors.append(f"the hardware sample buffer filled up {hwfull} time(s); samples were lost "
                      "(raise [profile] sampling_period)")
    run = CuptiRun(profile=profile, cubins={k: v for k, v in cubin_bytes.items() if k in used}, errors=errors,
                   complete=complete, launches_seen=dict(launch_count), hardware_buffer_full=hwfull,
                   cupti_version=version, format=fmt, kernel_records=kernel_records,
                   activity_dropped=activity_dropped, drains=drains, contexts=tuple(sorted(reason_of)),
                   marks=marks)
    run.durations = {n: [l.duration_ns for l in launches[n] if l.duration_ns] for n in launches
                     if _matches(n, dem.get(n, n), kernels)}
    if not pcs and require_samples:
        if any("hardware_buffer_full" in e for e in errors):
            raise ProfilingError("CUPTI's hardware sample buffer overflowed and no samples could be read back",
                                 f"sample less often: raise [profile] sampling_period (now {period}; 12-15 suits "
                                 "most harnesses), or set GPA_CUPTI_HW_BYTES to a larger buffer")
        if errors:
            raise ProfilingError("the CUPTI collector recorded no PC samples: " + "; ".join(errors[:3]),
                                 "see the CUPTI error above; `collector = \"ncu\"` is the fallback")
        raise no_samples_error("CUPTI", output_tail, kernels_filter=kernels, kernels_seen=list(launch_count))
    return run
