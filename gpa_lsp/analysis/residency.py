"""What share of a kernel's reads the L2 serves when the kernel runs again over the same data.

Why: a harness times a kernel by launching it again and again over the same buffers (its own timing
loop, ``gpa verify`` and benchmarks/accuracy/record.py all do), and Hopper's L2 (50 MB on the H100,
60 MB on the H200) keeps what the previous launch read. Nsight Compute flushes the caches before
each profiled launch, so the profile's DRAM bytes are the footprint read cold; a model that prices
the coalesced code's reads at DRAM's roof prices them cold too. The residency probe
(benchmarks/residency/residency_probe.cu, the H200 2026-11-28, 60 MB of L2) timed one-pass
launches that read the footprint the previous launch read, under ncu without its cache flush: up
to half the L2 they take 2.55 us + bytes at 9.5 TB/s (a 36 MB read 6.5 us, the L2 keeping 89-95%
up to 48 MB), from twice the L2 3.15 us + bytes at 4.6 TB/s (DRAM), between them the L2 keeps less
and less (52 MB: 59%, 56 MB: 8%, 64 MB: 2%).
``resident_share`` is the share of the reads the L2 served at a footprint (``residency.json``:
where the duration sits between the two lines), linear between the probe's footprints;
``resident_cost`` what a kept byte costs against DRAM; ``ramp_ns`` the launch's fixed cost.

When: only where the profile saw the kernel launched more than once (``relaunched``). A harness that
times a kernel launches it again (the cases' harnesses three times under ``--quick``), but a
program may also run a kernel once over data it has just copied, and the profile is the only
evidence the advisor has of which: Nsight Compute profiles up to ``[profile] launch_count`` launches
of each kernel (5 by default) and CUPTI sees every launch. A bundle recorded with one launch per
kernel (the kernels/ cases' ncu bundles, ``GPA_NCU_LAUNCHES=1``) is priced cold, as before.

Scope: the *coalesced* code's reads (``coalescing.model_at``): its footprint is the bytes the
profile's cold DRAM reads would be after the change, and what the L2 keeps of it is no DRAM work.
The original's own time is the profile's; an original whose reads the L2 would keep between
launches and whose time DRAM holds would run faster in the harness than profiled (no such case is
recorded; docs/optimizers.md, "L2 residency").

On another device: a device without a curve of its own takes its chip's (``probe_tables.name_in``)
with the footprints scaled by the two L2 sizes (``probed_devices.json``): what the L2 keeps is set
by its capacity. A device of unknown L2 size gets no residency (every read priced from DRAM, as
before)."""

from __future__ import annotations

from .curves import linear_flat
from .probe_tables import dram_peak, l2_bytes, residency_devices, residency_name


def _entry(device) -> dict | None:
    """The residency curve's entry that applies to ``device`` (its own or its chip's), or None."""
    return residency_devices().get(residency_name(device))


def relaunched(ctx) -> bool:
    """Whether the profile saw the kernel launched more than once (the evidence that the next
    launch reads what this one read)."""
    return len(ctx.kernel.launches) >= 2


def resident_share(device, footprint: float) -> float:
    """Share (0..1) of ``footprint`` bytes of reads, read again by the next launch, that the L2 of
    ``device`` serves; 0.0 without a curve or an L2 size for it."""
    name = residency_name(device)
    entry = residency_devices().get(name)
    if not entry or footprint <= 0:
        return 0.0
    if name != device.name:
        mine = l2_bytes(device.name)
        if not mine:
            return 0.0
        footprint *= entry["l2_bytes"] / mine       # a smaller L2 keeps less of the same bytes
    return linear_flat(entry["resident"], footprint)


def resident_cost(device, tp, dram_roof_pct: float) -> float:
    """What reading a byte the L2 keeps costs, as a share of what reading it from DRAM at its roof
    costs on ``device`` (``tp``: the kernel's throughput, for this device's DRAM peak): the DRAM rate
    at the roof over the probe's resident rate (the H200: 4.4 TB/s at its 94% roof over 9.5 TB/s).
    The resident rate is the L2's, which the chip sets, so a device that borrows the curve takes it
    as it is; without this device's DRAM peak, the probe's DRAM rate. 1.0 (no saving) without a
    curve."""
    entry = _entry(device)
    if not entry:
        return 1.0
    peak = dram_peak(getattr(tp, "dram_bytes", None), getattr(tp, "duration_ns", None),
                     tp.pct("dram") if tp is not None else None)
    dram = peak * dram_roof_pct / 100.0 if peak else entry["dram_bytes_per_s"]
    return min(1.0, dram / entry["l2_bytes_per_s"])


def ramp_ns(device) -> float:
    """The fixed cost of a launch that reads what the L2 keeps, beside its bytes (first wave in,
    last wave out: the resident line's intercept, 2.6 us on the H200); 0.0 without a curve."""
    entry = _entry(device)
    return float(entry["ramp_ns"]) if entry else 0.0
