"""GPA's speedup estimators (section 5.2), as plain arithmetic.

Symbols follow the paper: ``T`` all samples of the kernel, ``M`` matched
samples, ``L`` latency (not-issued) samples, ``A`` active (issued) samples.
Every estimate is >= 1: an optimizer cannot make the kernel slower in this
model, and a degenerate input (no samples) gives exactly 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping


def stall_elimination(total: float, matched: float) -> float:
    """Eq. 2: ``T / (T - M)`` -- the matched stalls vanish."""
    if total <= 0 or matched <= 0:
        return 1.0
    matched = min(matched, total)
    if matched >= total:
        # every sample matched: the model has no remaining work; cap at the sample resolution
        return float(total)
    return total / (total - matched)


def issue_bound(total: float, issued: float, selected: float, removed_selected: float) -> float:
    """The most any code change can gain: ``T / A_kept``.

    A sample's issued flag says the *scheduler* issued that cycle, so ``A`` (issued samples) is
    the share of cycles the scheduler needs to issue every warp's instructions. Whatever stalls a
    fix removes, those instructions still take one issue slot each, so the new time is at least
    the issue slots left: ``A_kept = A x (1 - removed/selected)``, where ``selected`` are the
    samples of the sampled warp issuing and ``removed`` those on instructions the fix deletes
    (the share of the issue work that vanishes). Returns ``inf`` when nothing bounds it.
    """
    if total <= 0 or issued <= 0 or selected <= 0:
        return math.inf
    kept = issued * (1.0 - min(max(removed_selected, 0.0), selected) / selected)
    if kept <= 0:
        return math.inf
    return max(1.0, total / kept)


def latency_hiding(total: float, matched_latency: float, active: float) -> float:
    """Eq. 3-4: ``T / (T - min(A, M_L))`` -- latency overlapped by at most the active samples.

    With ``A + L <= T`` the result is at most 2 (Theorem 5.1).
    """
    if total <= 0 or matched_latency <= 0 or active <= 0:
        return 1.0
    hidden = min(active, matched_latency, total / 2.0)
    return total / (total - hidden)


@dataclass(frozen=True)
class Scope:
    """A loop or function scope for Eq. 5."""

    key: object
    parent: object | None
    active: float                 # issued samples of instructions inside the scope (nested ones included)
    matched_latency: float        # matched latency samples whose def lies innermost in this scope


def scoped_latency_hiding(total: float, scopes: Iterable[Scope]) -> tuple[float, dict[object, float]]:
    """Eq. 5: latency hidden per scope is bounded by the active samples *in* that scope.

    Latency samples that a scope cannot hide with its own active samples are
    offered to the enclosing scope (whose active samples include the inner
    scope's). Returns (kernel speedup, hidden samples per scope).
    """
    scopes = list(scopes)
    if total <= 0 or not scopes:
        return 1.0, {}
    by_key = {s.key: s for s in scopes}
    depth: dict[object, int] = {}

    def d(k) -> int:
        if k in depth:
            return depth[k]
        seen = set()
        n, cur = 0, k
        while cur is not None and cur in by_key and cur not in seen:
            seen.add(cur)
            n += 1
            cur = by_key[cur].parent
        depth[k] = n
        return n

    pending = {s.key: s.matched_latency for s in scopes}
    used = {s.key: 0.0 for s in scopes}   # active samples already spent inside each scope
    hidden: dict[object, float] = {}
    for s in sorted(scopes, key=d, reverse=True):
        want = pending.get(s.key, 0.0)
        free = max(0.0, s.active - used[s.key])
        h = min(want, free)
        hidden[s.key] = h
        # spending active samples here also spends them in every enclosing scope
        cur = s.parent
        while cur is not None and cur in by_key:
            used[cur] += h
            cur = by_key[cur].parent
        used[s.key] += h
        rest = want - h
        if rest > 0 and s.parent in pending:
            pending[s.parent] += rest
    total_hidden = min(sum(hidden.values()), total / 2.0)
    if total_hidden <= 0:
        return 1.0, hidden
    return total / (total - total_hidden), hidden


# --- parallel optimizers (Eq. 6-10) ----------------------------------------------------------
#
# Why a per-warp probability: a sample's issued flag says whether the *scheduler* issued in that
# cycle (any of its warps), so ``p = A / T`` is the scheduler's issue rate P(k) with k warps, not
# the chance that one warp is ready. Eq. 8/9 need the latter: with k warps each ready with
# probability q, P(k) = 1 - (1 - q)^k, hence q = 1 - (1 - p)^(1/k). Using p itself as q (as if
# one warp were sampled per scheduler) overstates P at the current warp count when k > 1 and
# makes every parallel estimate wrong by a factor that grows with k.


def issue_probability(p: float, warps: float) -> float:
    """Eq. 8/9: P(k) = 1 - (1 - p)^k, a scheduler with k warps issues when any of them can."""
    p = min(max(p, 0.0), 1.0)
    if warps <= 0:
        return 0.0
    return 1.0 - (1.0 - p) ** warps


def warp_ready_probability(scheduler_rate: float, warps_per_scheduler: float) -> float:
    """The q with ``P(k) = scheduler_rate``: one warp's chance to be ready in a cycle."""
    r = min(max(scheduler_rate, 0.0), 1.0 - 1e-9)
    k = max(warps_per_scheduler, 1.0)
    return 1.0 - (1.0 - r) ** (1.0 / k)


def thread_balance(threads_per_block: int) -> float:
    """tb = ceil(t/32)*32 / t: the share of lanes wasted in the last warp of a block."""
    if threads_per_block <= 0:
        return 1.0
    return math.ceil(threads_per_block / 32) * 32 / threads_per_block


def thread_increase(active_warps: float, issued_ratio: float, threads_per_block: int, *,
                    schedulers: int = 4, max_warps: int = 64) -> float:
    """Eq. 6-10 for Thread Increase: more warps per scheduler raise its issue probability.

    ``issued_ratio`` is the scheduler issue rate measured with ``active_warps / schedulers``
    warps each; the same warps' ready probability q then gives P at ``max_warps``.
    Fuller warps (``tb``) do the same work in fewer warp instructions.
    """
    w = max(active_warps, 0.0)
    tb = thread_balance(threads_per_block)
    if w <= 0:
        return 1.0
    if w < schedulers:
        return max(1.0, (schedulers / w) * tb)
    k = w / schedulers
    q = warp_ready_probability(issued_ratio, k)
    now = issue_probability(q, k)
    best = issue_probability(q, max_warps / schedulers)
    if now <= 0:
        return 1.0
    return max(1.0, best / now * tb)


def block_increase(active_warps: float, issued_ratio: float, shares: Mapping[str, float], *,
                   schedulers: int = 4, total_warps: float | None = None,
                   sm_count: int | None = None) -> float:
    """Eq. 10 for Block Increase (grid smaller than the SM count).

    The busiest scheduler holds ``k = W/S`` warps and issues at ``P(k)``; its time is
    ``k / P(k)`` (work per warp fixed). Spreading the same ``total_warps`` over all
    ``sm_count`` SMs leaves ``k' = total_warps / (sm_count * S)`` warps per scheduler
    (at least one), time ``k' / P(k')``. The not-selected and pipe stalls that crowding
    caused are already in P (fewer warps compete), so they are not subtracted again.
    Memory-throttle samples are different: the memory system behind the SMs is shared,
    so that share of the time does not shrink when more SMs join (Amdahl on ``r_mthr``).
    Without ``total_warps``/``sm_count`` the target is one warp per scheduler (the paper's case).
    """
    w = max(active_warps, 0.0)
    p = min(max(issued_ratio, 0.0), 1.0)
    if w <= 0 or p <= 0:
        return 1.0
    k = max(w / schedulers, 1e-9)
    q = warp_ready_probability(p, k)
    if total_warps and sm_count:
        k_new = max(1.0, total_warps / (sm_count * schedulers))
    else:
        k_new = 1.0
    k_new = min(k_new, k)
    p_now, p_new = issue_probability(q, k), issue_probability(q, k_new)
    if p_now <= 0 or p_new <= 0:
        return 1.0      # an issue rate below float resolution (q rounds to 0): nothing to estimate from
    now = k / p_now
    new = k_new / p_new
    if new <= 0:
        return 1.0
    s = now / new
    r = min(max(shares.get("memory_throttle", 0.0), 0.0), 1.0)
    return max(1.0, 1.0 / (r + (1.0 - r) / s))
