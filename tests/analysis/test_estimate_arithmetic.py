"""Arithmetic unit tests: each estimator equation against values computed by hand."""

from __future__ import annotations

import pytest

from gpa_lsp.analysis.blame import apportion
from gpa_lsp.analysis.estimate import (Scope, block_increase, issue_probability, latency_hiding,
                                       warp_ready_probability,
                                       scoped_latency_hiding, stall_elimination, thread_balance,
                                       thread_increase)
from gpa_lsp.analysis.occupancy import occupancy
from gpa_lsp.profile.model import Device, Launch


def test_arithmetic_eq1_apportion_by_issue_over_distance():
    # I = (20, 10), d = (4, 1): weights 5 and 10 -> 1/3 and 2/3 of 90 stall and 30 latency samples
    got = apportion(90.0, 30.0, [("ldc", 20 / 4), ("ldg", 10 / 1)])
    assert got == [("ldc", pytest.approx(30.0), pytest.approx(10.0)), ("ldg", pytest.approx(60.0), pytest.approx(20.0))]


def test_arithmetic_eq1_paper_figure_4d_equal_split():
    # the paper's example: LDC has twice the issued samples and twice the distance of LDG -> equal shares
    got = apportion(10.0, 4.0, [("ldc", 2 / 2), ("ldg", 1 / 1)])
    assert [g[1] for g in got] == [pytest.approx(5.0), pytest.approx(5.0)]


def test_arithmetic_eq2_stall_elimination():
    assert stall_elimination(1000, 250) == pytest.approx(1000 / 750)
    assert stall_elimination(1000, 0) == 1.0


def test_arithmetic_eq3_4_latency_hiding_bounded_by_active():
    # T=1000, matched latency 400, active 300 -> 1000/700
    assert latency_hiding(1000, 400, 300) == pytest.approx(1000 / 700)
    # active larger than the matched latency -> 1000/(1000-400)
    assert latency_hiding(1000, 400, 600) == pytest.approx(1000 / 600)


def test_arithmetic_eq5_scope_bounded_by_its_active_samples():
    # inner loop: 100 active, 300 matched latency; outer loop: 250 active (inner's 100 included), 50 matched
    scopes = [Scope("inner", "outer", 100, 300), Scope("outer", None, 250, 50)]
    speedup, hidden = scoped_latency_hiding(1000, scopes)
    # inner hides 100; 200 carry to outer, which has 250 - 100 = 150 free -> hides min(250, 150) = 150
    assert hidden == {"inner": pytest.approx(100), "outer": pytest.approx(150)}
    assert speedup == pytest.approx(1000 / 750)


def test_arithmetic_eq8_issue_probability():
    assert issue_probability(0.2, 2) == pytest.approx(1 - 0.8 ** 2)
    assert thread_balance(48) == pytest.approx(64 / 48)
    assert thread_balance(256) == 1.0


def test_arithmetic_eq10_thread_increase():
    # W = 2 warps per SM < S = 4 schedulers: (S/W) * tb = 2 * (32/16) = 4
    assert thread_increase(2, 0.3, 16) == pytest.approx(4.0)
    # W = 16 (4 per scheduler), scheduler issue rate 0.1 = P(4): one warp is ready with
    # q = 1 - 0.9^(1/4); at 64 warps (16 per scheduler) P = 1 - (1-q)^16 = 1 - 0.9^4
    expect = (1 - 0.9 ** 4) / 0.1
    assert thread_increase(16, 0.1, 256) == pytest.approx(expect)
    assert warp_ready_probability(1 - 0.9 ** 4, 4) == pytest.approx(0.1)


def test_arithmetic_eq10_block_increase():
    # W = 32 (k = 8 per scheduler), scheduler rate p = P(8) = 1 - 0.5^8 (q = 0.5);
    # 64 blocks x 32 warps over 132 SMs x 4 schedulers: k' = 2048 / 528 per scheduler
    k2 = 2048 / 528
    s = (8 / (1 - 0.5 ** 8)) / (k2 / (1 - 0.5 ** k2))
    got = block_increase(32, 1 - 0.5 ** 8, {}, total_warps=2048, sm_count=132)
    assert got == pytest.approx(s)
    # a memory-throttle share does not shrink with more SMs: Amdahl on r_mthr = 0.2
    got = block_increase(32, 1 - 0.5 ** 8, {"memory_throttle": 0.2, "not_selected": 0.3}, total_warps=2048,
                         sm_count=132)
    assert got == pytest.approx(1 / (0.2 + 0.8 / s))
    # no target given: one warp per scheduler (the paper's case)
    assert block_increase(8, 0.75, {}) == pytest.approx((2 / 0.75) / (1 / (1 - 0.5)))
    # an issue rate below float resolution (1 issued sample in 10^17, issue 16): 1, not ZeroDivisionError
    assert block_increase(8, 1e-17, {}) == 1.0


def test_arithmetic_occupancy_limits():
    dev = Device("H100", 90, 132)
    # 16 threads per block: 1 warp per block, 32 blocks max -> 32 warps (1000 blocks on 132 SMs would be 8)
    occ = occupancy(dev, Launch((100000, 1, 1), (16, 1, 1)), registers=32)
    assert (occ.blocks_per_sm, occ.active_warps, occ.limiter) == (32, 32.0, "blocks")
    # 128 registers x 256 threads: 32768 registers per block -> 2 blocks -> 16 warps
    occ = occupancy(dev, Launch((100000, 1, 1), (256, 1, 1)), registers=128)
    assert (occ.blocks_per_sm, occ.active_warps, occ.limiter) == (2, 16.0, "registers")
    # 2 blocks of 512 threads on 132 SMs: the grid leaves SMs idle, one block each
    occ = occupancy(dev, Launch((2, 1, 1), (512, 1, 1)), registers=32)
    assert (occ.active_warps, occ.limiter) == (16.0, "grid")
