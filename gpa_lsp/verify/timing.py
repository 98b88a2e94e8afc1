"""The timing protocol: original (A) and variant (B) run interleaved, A B A B ..., the ratio per pair.

Interleaving puts both variants under the same clock and thermal drift; the pair ratio A_i / B_i
cancels what is shared. The result is the median of the pair ratios with a distribution-free 95%
interval for the median (order statistics of the binomial(n, 1/2)); with fewer than 6 pairs the
interval is the range of the ratios (the binomial gives no 95% interval for n <= 5).
Pure arithmetic on recorded durations: tested without a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .model import NO_GAIN

MIN_PAIRS = 5


@dataclass(frozen=True)
class Ratio:
    median: float
    low: float
    high: float
    pairs: int

    @property
    def verdict(self) -> str:
        """``gain`` | ``no_gain`` | ``slower`` by the 1.02x rule (slower: below 1/1.02)."""
        if self.median >= NO_GAIN:
            return "gain"
        return "slower" if self.median < 1.0 / NO_GAIN else "no_gain"


def schedule(variants: int, pairs: int) -> list[int]:
    """Run order: 0 is the original, 1..variants the variants, interleaved round by round."""
    out: list[int] = []
    for _ in range(pairs):
        for v in range(variants + 1):
            out.append(v)
    return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def median_interval(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval for the median: (x_(k), x_(n-k+1)) with P(Bin(n,1/2) < k) <= alpha/2."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("no ratios")
    alpha = 1.0 - confidence
    k = 0
    cdf = 0.0
    for j in range(n + 1):
        p = math.comb(n, j) / 2.0 ** n
        if cdf + p > alpha / 2:
            break
        cdf += p
        k = j + 1
    if k == 0:
        return s[0], s[-1]
    return s[k - 1], s[n - k]


def pair_ratios(original: Sequence[float], variant: Sequence[float]) -> list[float]:
    """A_i / B_i for each round (durations of the same round; any unit)."""
    if len(original) != len(variant):
        raise ValueError("original and variant must have one duration per round")
    return [a / b for a, b in zip(original, variant) if a > 0 and b > 0 and math.isfinite(a / b)]


def compare(original: Sequence[float], variant: Sequence[float]) -> Ratio:
    ratios = pair_ratios(original, variant)
    if not ratios:
        raise ValueError("no usable (original, variant) pair")
    lo, hi = median_interval(ratios)
    return Ratio(median=_median(ratios), low=lo, high=hi, pairs=len(ratios))


def per_run(durations_ns: Sequence[int]) -> float | None:
    """One run's figure for a kernel: the median launch duration, the first (cold) launch left out
    when there are others (cold instruction cache, first touch of the data)."""
    d = [x for x in durations_ns if x and x > 0]
    if len(d) > 1:
        d = d[1:]
    return _median(d) if d else None
