"""Local Array: the cost of a dynamically indexed per-thread array kept in local memory.

Indexed with a run-time value, the array cannot live in registers; every
access is an ``LDL``/``STL``. As for spills (see ``register_reuse``), the fix
removes those instructions, so the match is every sample they cost: stalls
blamed on the loads (RAW) and stores (WAR), and the accesses' own samples
(LG-queue throttle, issue). Local accesses that nvdisasm marks as spills are
Register Reuse's.
"""

from __future__ import annotations

from .base import Match, Optimizer
from .register_reuse import local_cost


class LocalArray(Optimizer):
    id = "local_array"
    title = "Dynamically Indexed Local Array"
    suggestion = ("A per-thread array indexed with a run-time index lives in local memory. Index it with "
                  "compile-time constants (fully unrolled loops), replace it with scalars, or keep it in "
                  "shared memory or registers through warp shuffles.")

    def match(self, ctx) -> Match | None:
        return local_cost(ctx, spill=False)
