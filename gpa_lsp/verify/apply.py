"""Verification results onto the advice: the measured figure ranks it, a change that gained nothing
goes last as a hint, one the compiler already makes is dropped from the ranking (kept, marked)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from ..analysis.model import Advice, KernelReport, Report
from ..analysis.ranking import rank
from .model import Verification

AdviceKey = tuple[str, str]     # (kernel name, optimizer id)


def rerank(advice: tuple[Advice, ...] | list[Advice]) -> tuple[Advice, ...]:
    """Advice still worth doing first (by the effective figure), then what was tried and gained nothing."""
    tried = [a for a in advice if a.verification is not None and a.verification.no_gain]
    rest = [a for a in advice if not (a.verification is not None and a.verification.no_gain)]
    tried.sort(key=lambda a: -(a.verification.speedup or 0.0))
    return tuple(rank(rest, speed=lambda a: a.effective_speedup)) + tuple(tried)


def attach(report: Report, results: Mapping[AdviceKey, Verification]) -> Report:
    """The report with ``results`` on their advice and every touched kernel re-ranked."""
    if not results:
        return report
    kernels = []
    for k in report.kernels:
        mine = {opt: v for (name, opt), v in results.items() if name == k.name}
        if not mine:
            kernels.append(k)
            continue
        adv = [dataclasses.replace(a, verification=mine[a.optimizer]) if a.optimizer in mine else a for a in k.advice]
        kernels.append(dataclasses.replace(k, advice=rerank(adv)))
    return dataclasses.replace(report, kernels=tuple(kernels))


def worth_trying(report: Report, top: int, kinds: Callable[[str], bool] = lambda kind: True) -> list[tuple[KernelReport, Advice]]:
    """The ``top`` advice with a fix over all kernels, by estimate (ties: the hotter kernel first)."""
    cands = [(k, a) for k in report.kernels for a in k.advice if a.fix is not None and kinds(a.fix.kind)]
    cands.sort(key=lambda ka: (-ka[1].estimated_speedup, -ka[0].samples))
    return cands[:max(0, top)]
