"""The order of advice and the kernel's limiter: judgements over what the advisor assembled.

Apart from the advisor so that what re-ranks (``verify.apply``, by measured speedups) needs neither
the advice assembly nor the sources; ``rank`` reads ``Optimizer.generic``, never ids.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .context import KernelContext
from .model import Advice
from .optimizers import REGISTRY, Optimizer

TIE = 0.02                   # estimates closer than this (relative) are within the sampling noise


def rank(advice: Sequence[Advice], speed: Callable[[Advice], float] = lambda a: a.estimated_speedup,
         optimizers: Sequence[Optimizer] | None = None) -> list[Advice]:
    """Highest estimate first; within the sampling noise (``TIE``) specific advice before generic
    (``Optimizer.generic`` of the optimizer that gave it, among ``optimizers``, else the registry's).

    Why: GPA ranks the specific, mechanical fix over the generic one it is part of. Two estimates
    within a few percent are not distinguishable from samples, and the generic optimizer's match
    includes the specific one's samples, so its lead there says nothing about which fix is better.
    """
    generic = {o.id for o in (REGISTRY if optimizers is None else optimizers) if o.generic}
    out = sorted(advice, key=lambda a: (-speed(a), a.optimizer))
    changed = True
    while changed:
        changed = False
        for i in range(len(out) - 1):
            a, b = out[i], out[i + 1]
            if a.optimizer in generic and b.optimizer not in generic \
                    and speed(a) <= speed(b) * (1.0 + TIE):
                out[i], out[i + 1] = b, a
                changed = True
    return out


def limiter(ctx: KernelContext) -> str:
    """What bounds the kernel, read from its samples (seed 001's classes plus GPA's stall groups)."""
    if ctx.total == 0:
        return "latency"
    s = ctx.share
    if s("synchronization") >= 0.3:
        return "synchronization"
    if s("instruction_fetch") >= 0.3:
        return "instruction_fetch"
    if s("memory_throttle") >= 0.2:
        return "memory"
    if s("active") + s("pipe_busy") + s("not_selected") >= 0.5:
        return "compute"
    return "latency"
