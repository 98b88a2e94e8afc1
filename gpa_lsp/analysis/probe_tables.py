"""The probe tables (``gpa_lsp/data/*.json``, measured by the probes under benchmarks/) and which
device's rows apply to the device a profile was recorded on.

Each table is read and parsed once here (``_load``) for every model that reads it: the coalescing
probes' measurements (``coalescing.json``, written by benchmarks/coalescing/table*.py) by
analysis/coalescing.py (for spread.py and Warp Divergence too), gathers.py and lanewalk.py; the
memory-parallelism curves by parallelism.py and waves.py; the atomics probe's levels by Atomic
Privatization.

**Probe tables on other devices.** Each table holds rows per device name, and only for the devices
someone probed. A device a table does not name takes the rows of a probed device of the same chip
(``probed_devices.json``: the same compute capability and SM count, e.g. an H200 and an H100 SXM,
both GH100 with 132 SMs): what the tables hold are the SMs', L1's and L2's costs per request and
shares of each unit's own peak, which the chip sets; the memory behind it differs (HBM3e against
HBM3), so a borrowed DRAM share is converted to this device's peak (``borrowed_dram_scale``). Every
report says when tables were borrowed, and which are missing (``coverage``). A device of no probed
chip gets no unit models (the methods' sample-based estimates only), as before."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Mapping

# (table file, probe key in a device's entry or None for the whole entry, what reads it, whether a device
# of no probed chip still takes the file's first device's rows: Atomic Privatization's speedups are
# ratios of two loops on one device, kept for any device as before). Not here, as the residency curve
# is not (residency_name): coalescing.json's "tile" and "rowgather" probes, which only matter to a
# loop-free kernel with large blocks or a transposed access (analysis/tiles.py) or to gathered rows
# (gathers.row_gather_roof), whose advice names the device they were measured on; a note on every
# report of a device that borrows them would say nothing about the others.
TABLES = (("coalescing.json", "walk", "Global Memory Coalescing's unit model", False),
          ("coalescing.json", "loopfree", "the loop-free DRAM roof", False),
          ("coalescing.json", "lanewalk_spread", "the lane-walk spread probe", False),
          ("coalescing.json", "fieldgather", "the gather probe", False),
          ("coalescing.json", "divergence", "the divergence probe", False),
          ("memory_parallelism.json", None, "the memory-parallelism roof", False),
          ("atomics.json", None, "Atomic Privatization's measured speedups", True))


# the files whose first device's rows a device of no probed chip takes (TABLES' last field)
ANY_DEVICE = frozenset(t for t, _, _, any_device in TABLES if any_device)

# how a device gets tables of its own (said in every report that borrows, and by `gpa doctor`)
RECORD_HINT = ("Its own tables: benchmarks/coalescing/record.sh and record_probe.sh, scripts/gpu/record_mlp.sh and "
               "benchmarks/atomics on this device (benchmarks/README.md).")


@lru_cache(maxsize=None)
def _load(name: str) -> dict:
    return json.loads(resources.files("gpa_lsp").joinpath(f"data/{name}").read_text()).get("devices", {})


def coalescing_devices() -> dict:
    """Device name -> that device's probe tables ({} when the file has none)."""
    return _load("coalescing.json")


@lru_cache(maxsize=1)
def probed_devices() -> dict[str, tuple[int, int]]:
    """Probed device name -> (compute capability, SM count): its chip."""
    return {n: (int(d["sm"]), int(d["sm_count"])) for n, d in _load("probed_devices.json").items()}


@lru_cache(maxsize=None)
def l2_bytes(name: str) -> int | None:
    """The L2 size of a probed device (``probed_devices.json``), None when not recorded."""
    return _load("probed_devices.json").get(name, {}).get("l2_bytes")


def chip(device) -> tuple[int, int] | None:
    """(compute capability, SM count) of a profile's device, or None when either is unknown."""
    sm, sms = getattr(device, "sm", 0), getattr(device, "sm_count", 0)
    return (int(sm), int(sms)) if sm and sms else None


def name_in(devices: Mapping[str, dict], device, probe: str | None = None) -> str:
    """The key of ``devices`` (one table's rows by device name) whose rows apply to ``device`` (a
    profile's Device), for one ``probe`` of the entry (None: the entry as a whole): its own name
    when its entry has that probe, else the first probed device of the same chip whose entry has
    it, else its own name (which holds no such rows: callers get none, as before). Per probe, so a
    device with some probes of its own takes the others from its chip."""
    return _name_in(devices, device.name, chip(device), probe)


def _has(devices: Mapping[str, dict], name: str, probe: str | None) -> bool:
    """Whether ``devices`` holds rows of ``name`` for ``probe`` (None: any entry)."""
    return name in devices and (probe is None or bool(devices[name].get(probe)))


def _name_in(devices: Mapping[str, dict], name: str, mine: tuple[int, int] | None, probe: str | None = None) -> str:
    if _has(devices, name, probe):
        return name
    if mine is not None:
        probed = probed_devices()
        for other in devices:
            if probed.get(other) == mine and _has(devices, other, probe):
                return other
    return name


def _resolved(table: str, name: str, mine: tuple[int, int] | None, probe: str | None) -> str:
    """``_name_in`` on one table file, with the file's rule for a device of no probed chip
    (``TABLES``: the atomics table's first device applies to any device)."""
    rows = _load(table)
    got = _name_in(rows, name, mine, probe)
    if not _has(rows, got, probe) and rows and table in ANY_DEVICE:
        got = next(iter(rows))
    return got


@lru_cache(maxsize=64)
def _coverage(name: str, mine: tuple[int, int] | None) -> str | None:
    borrowed: dict[str, list[str]] = {}
    missing: list[str] = []
    for table, probe, what, _ in TABLES:
        rows = _load(table)
        if _has(rows, name, probe):
            continue
        got = _resolved(table, name, mine, probe)
        if got in rows:
            borrowed.setdefault(got, []).append(what)
        else:
            missing.append(what)
    parts = []
    for other, whats in borrowed.items():
        same = mine is not None and probed_devices().get(other) == mine
        how = (f"the same chip: sm_{mine[0]}, {mine[1]} SMs; the DRAM shares their loads in flight reach converted "
               "to this device's peak by Little's law" if same else "not the same chip: a rough guide only")
        parts.append(f"{name} has no probe of its own for {', '.join(whats)}: they use those measured on {other} ({how})")
    if missing:
        parts.append(f"{name} has no probe tables of its chip: without them " + ", ".join(missing)
                     + " are not used (estimates from the sampled stalls only)")
    if not parts:
        return None
    return "; ".join(parts) + ". " + RECORD_HINT


def coverage(device) -> str | None:
    """One sentence for the report when ``device``'s own rows are missing from a probe table: which
    tables were borrowed from which probed device, which are not used; None when it has its own."""
    return _coverage(device.name, chip(device))


# below this share of its peak a launch's DRAM bytes over its time say little of the peak (rounding)
PEAK_FROM_PCT = 1.0


def dram_peak(bytes_: float | None, duration_ns: float | None, pct: float | None) -> float | None:
    """Bytes per second at 100% of DRAM's peak, from what one launch moved, its duration and the
    share of peak the counters gave (None when any is missing or the share too small)."""
    if not bytes_ or not duration_ns or not pct or pct < PEAK_FROM_PCT:
        return None
    return bytes_ / (duration_ns * 1e-9 * pct / 100.0)


def borrowed_dram_scale(table_peak: float | None, tp) -> float:
    """What a DRAM share measured on a probed device is worth on this one, where its tables were
    borrowed (``name_in``): bytes in flight pull bytes per second, not a share (Little's law: the
    same in flight at the same latency moves the same bytes per second), so a share of the probed
    device's peak is ``table_peak / this device's peak`` of this one's (an H200's HBM3e peak is
    1.43x the H100's HBM3: the same loads in flight reach 70% of the share). 1.0 without both
    peaks (the kernel's DRAM bytes, duration and share, ``tp``)."""
    mine = dram_peak(getattr(tp, "dram_bytes", None), getattr(tp, "duration_ns", None),
                     tp.pct("dram") if tp is not None else None)
    return table_peak / mine if table_peak and mine else 1.0


@lru_cache(maxsize=None)
def probed_dram_peak(name: str) -> float | None:
    """Bytes per second at 100% of a probed device's DRAM peak: the median over its walk probe's rows
    (``coalescing.json``) of bytes / (duration x share); None without them."""
    rows = coalescing_devices().get(name, {}).get("walk") or []
    peaks = sorted(p for r in rows if (p := dram_peak(r.get("dram_bytes"), r.get("duration_ns"), r.get("dram_pct"))))
    return peaks[len(peaks) // 2] if peaks else None


def share_scale(device, src: str, tp) -> float:
    """What a DRAM share in rows measured on the probed device ``src`` is worth on ``device`` (the
    kernel's, whose throughput is ``tp``): 1.0 on its own rows, else ``borrowed_dram_scale``."""
    if src == device.name:
        return 1.0
    return borrowed_dram_scale(probed_dram_peak(src), tp)


def coalescing_name(device, probe: str = "walk") -> str:
    """The device name whose rows of ``coalescing.json`` for ``probe`` apply to ``device`` (``name_in``;
    "walk": the unit model's table, ``coalescing.device_table``)."""
    return name_in(coalescing_devices(), device, probe)


def coalescing_rows(device, probe: str) -> list[dict]:
    """The rows of ``coalescing.json``'s ``probe`` that apply to ``device`` (``coalescing_name``: its
    own, else its chip's), empty without any."""
    return (coalescing_devices().get(coalescing_name(device, probe)) or {}).get(probe) or []


def mlp_devices() -> dict:
    """Device name -> the memory-parallelism curves (``memory_parallelism.json``)."""
    return _load("memory_parallelism.json")


def mlp_curve_scale(ctx) -> float:
    """``share_scale`` for the memory-parallelism curves the kernel's device takes (``mlp_name``):
    a borrowed curve's shares are another memory's (docs/optimizers.md, its grounding on both
    devices' curves)."""
    return share_scale(ctx.device, mlp_name(ctx.device), ctx.kernel.throughput)


def mlp_name(device) -> str:
    """The device name whose curves of ``memory_parallelism.json`` apply to ``device`` (``name_in``)."""
    return name_in(mlp_devices(), device)


def residency_devices() -> dict:
    """Device name -> the L2 residency probe's curve and L2 size (``residency.json``)."""
    return _load("residency.json")


def residency_name(device) -> str:
    """The device name whose residency curve applies to ``device`` (``name_in``). Not in ``TABLES``:
    the curve only matters to a relaunched kernel whose coalesced reads fit the L2, and the advice
    it bounds says so (``Advice.bound_text``); a note on every report of a device that borrows it
    would say nothing about the others."""
    return name_in(residency_devices(), device)


def atomics_devices() -> dict:
    """Device name -> the atomics probe's measured levels (``atomics.json``)."""
    return _load("atomics.json")


def atomics_name(device) -> str:
    """The device name whose levels of ``atomics.json`` apply to ``device``: its own or its chip's
    (``name_in``), else the table's first device's (``TABLES``: kept for any device)."""
    return _resolved("atomics.json", device.name, chip(device), None)
