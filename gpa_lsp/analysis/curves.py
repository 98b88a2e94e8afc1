"""Reading a measured curve between its points (the probe tables' rows, rising in x)."""

from __future__ import annotations

import math
from typing import Sequence


def linear_flat(pts: Sequence[Sequence[float]], x: float) -> float:
    """The curve ``pts`` ((x, y) rising in x) at ``x``: linear between its points, flat beyond its
    first and last (no extrapolation past what was measured)."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


def nearest_warps(rows: Sequence[dict], warps: float) -> dict:
    """The probe row (``rows``, not empty) whose ``warps_per_sm`` is nearest ``warps`` (> 0) in log2:
    the probes run at 8, 16, 32 and 64 warps per SM, a doubling apart."""
    return min(rows, key=lambda r: abs(math.log2(r["warps_per_sm"]) - math.log2(warps)))
