"""The same warps spread over more SMs: what the busy SMs' own units say it gains (Block Increase's
fixed-work path: fewer blocks than SMs, each thread's work fixed).

Why not the busiest scheduler's ``k / P(k)`` alone: it prices issue contention only, as if each
busy SM overlapped its warps perfectly behind everything else. On the busy SMs of a small grid the
SM's own units (the L1/LSU data path, the issue slots) can be near their peak even when the
device-wide average is low: the profile's elapsed shares are averaged over every SM, idle ones
included, so a grid on ``b`` of ``S`` SMs loads each busy SM's L1 at ``S / b`` times the average
(benchmarks/saturation/spread.cu under ncu: ``l1tex__throughput`` max = avg x 132 / blocks within
0.2%, at 32, 64 and 96 blocks; ``smsp__issue_active ... _active`` is already per active SM). A warp
then waits in the busy SM's queues, and spreading the warps takes that wait away.

The model: each busy SM is a closed queueing network (exact mean-value analysis) whose customers
are its resident warps, cycling through a queue per SM-local unit (L1, issue; service demand in
proportion to the unit's measured share of its roof) and a delay ``Z`` for everything else (the
latency of a warp's own chain: L2 and DRAM round trips, dependent arithmetic). ``Z`` is the one
unknown, solved so that ``N`` warps load the busiest unit at its measured share. Spreading the
``N`` warps of ``b`` busy SMs over all ``S`` leaves ``N b / S`` per SM, each SM doing ``b / S`` of
the work: the gain is ``X(N b / S) / (b / S X(N))`` (``X`` the SM's throughput). Device-wide units
(L2, DRAM) keep their work: the new time is at least their share of it at their roof.

No constant is fitted: the roof of the L1 is the coalescing probe's (``DeviceTable.roofs``), the
customers are the warps the occupancy gives. Checked on the H100 against spread.cu (per-lane row
walks whose busy SMs' L1 runs at 55-98% of its roof, coalesced column walks at 1-10%; 18 grids of
32/64/96 blocks of 256 threads against 64-thread blocks on every SM): benchmarks/saturation/README.md
("The same warps on more SMs") and tests/analysis/test_spread.py.
"""

from __future__ import annotations

import math

from .coalescing import BUSY_SCALED, UNIT_ROOF_DEFAULT, busy_sms, device_table, table_name

# units each SM has its own of; which of their shares average over every SM, idle ones included,
# is coalescing.BUSY_SCALED (issue's is averaged over active cycles by ncu and the CUPTI collector)
SM_UNITS = ("l1", "issue")
# units shared by the whole device: spreading does not change their work
DEVICE_UNITS = ("l2", "dram")


def mva_throughput(customers: float, demands: tuple[float, ...], delay: float) -> float:
    """Throughput of a closed network of ``customers`` (real: linear between whole numbers) cycling
    through single-server queues of service ``demands`` and a delay station ``delay`` (exact MVA)."""
    def at(n: int) -> float:
        q = [0.0] * len(demands)
        x = 0.0
        for k in range(1, n + 1):
            r = [d * (1.0 + qi) for d, qi in zip(demands, q)]
            x = k / (sum(r) + delay)
            q = [x * ri for ri in r]
        return x
    if customers < 1.0:
        return customers * at(1)
    lo = int(math.floor(customers))
    f = customers - lo
    return at(lo) if f == 0 else at(lo) * (1.0 - f) + at(lo + 1) * f


def solve_delay(customers: float, demands: tuple[float, ...], utilisation: float) -> float:
    """The delay ``Z`` at which ``customers`` load the largest of ``demands`` at ``utilisation``
    (0..1); 0 when even no delay leaves it below."""
    top = max(demands)
    if mva_throughput(customers, demands, 0.0) * top <= utilisation:
        return 0.0
    lo, hi = 0.0, 1.0
    while mva_throughput(customers, demands, hi) * top > utilisation and hi < 1e9:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mva_throughput(customers, demands, mid) * top > utilisation:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def busy_shares(util: dict[str, float], roofs: dict[str, float], busy: int, sm_count: int) -> dict[str, float]:
    """Each SM-local unit's share of its roof on the busy SMs (0..0.999)."""
    out = {}
    for u in SM_UNITS:
        pct = util.get(u)
        if not pct:
            continue
        scale = sm_count / max(1, busy) if u in BUSY_SCALED else 1.0
        out[u] = min(0.999, pct * scale / roofs.get(u, UNIT_ROOF_DEFAULT))
    return out


def spread_gain(util: dict[str, float], roofs: dict[str, float], *, warps_per_sm: float, busy: int,
                sm_count: int) -> float | None:
    """The gain of spreading ``warps_per_sm`` warps on each of ``busy`` SMs over all ``sm_count``
    (see the module docstring); None without an SM-local unit's share."""
    if busy >= sm_count or warps_per_sm <= 0:
        return None
    shares = busy_shares(util, roofs, busy, sm_count)
    if not shares or max(shares.values()) <= 0:
        return None
    demands = tuple(shares.values())
    n = warps_per_sm
    z = solve_delay(n, demands, max(demands))
    r = busy / sm_count
    now = mva_throughput(n, demands, z)
    gain = mva_throughput(max(1.0, n * r), demands, z) / (r * now) if now > 0 else 1.0
    for u in DEVICE_UNITS:
        pct = util.get(u)
        if pct:
            gain = min(gain, roofs.get(u, UNIT_ROOF_DEFAULT) / pct)
    return max(1.0, gain)


def kernel_spread_gain(ctx) -> float | None:
    """``spread_gain`` for the kernel's launch and profile (roofs: the coalescing probe's), or None
    without unit throughput, occupancy or a launch on fewer blocks than SMs."""
    tp, L, occ = ctx.kernel.throughput, ctx.launch, ctx.occupancy
    if tp is None or L is None or occ is None or not tp.units:
        return None
    table = device_table(table_name(ctx))
    roofs = dict(table.roofs) if table is not None else {}
    sms = ctx.device.sm_count or 1
    busy = busy_sms(ctx)
    warps = L.blocks * occ.warps_per_block / busy
    return spread_gain(dict(tp.units), roofs, warps_per_sm=min(warps, occ.active_warps), busy=busy, sm_count=sms)
