"""The timing protocol of verification (gpa_lsp/verify/timing.py).

Unit tests of arithmetic (hand-written durations, named as such) and the protocol on durations
recorded by CUPTI on the H100 (launch durations of kernels/lavamd_unroll's original and improved
recordings).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.verify import timing
from gpa_lsp.verify.model import Verification

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def test_schedule_interleaves_the_original_first_in_every_round():
    assert timing.schedule(2, 3) == [0, 1, 2, 0, 1, 2, 0, 1, 2]


def test_median_interval_arithmetic():
    # unit test of arithmetic: for n = 10 the 95% interval of the median is (x_(2), x_(9))
    xs = [float(x) for x in range(1, 11)]
    assert timing.median_interval(xs) == (2.0, 9.0)
    # n <= 5: no binomial 95% interval exists: the whole range
    assert timing.median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0)


def test_pair_ratios_and_the_one_percent_rules():
    # unit test of arithmetic: a 1.5% gain is no gain; 3% slower is slower
    r = timing.compare([100.0] * 6, [98.5] * 6)
    assert r.verdict == "no_gain" and r.median == pytest.approx(100 / 98.5)
    assert timing.compare([100.0] * 6, [103.0] * 6).verdict == "slower"
    assert timing.compare([100.0] * 6, [80.0] * 6).verdict == "gain"
    with pytest.raises(ValueError):
        timing.compare([1.0, 2.0], [1.0])


def test_per_run_leaves_out_the_cold_first_launch():
    # unit test of arithmetic
    assert timing.per_run([900, 100, 102, 98]) == 100
    assert timing.per_run([500]) == 500
    assert timing.per_run([]) is None


def test_protocol_on_launch_durations_recorded_on_the_h100():
    def durations(path):
        k = read_bundle(path).profile.kernels[0]
        return [l.duration_ns for l in k.launches if l.duration_ns]
    a = durations(KERNELS / "lavamd_unroll" / "recorded" / "cupti.gpabundle")
    b = durations(KERNELS / "lavamd_unroll" / "recorded" / "improved" / "cupti.gpabundle")
    n = min(len(a), len(b))
    r = timing.compare(a[:n], b[:n])
    # benchmarks/accuracy/timings.json: 0.189 ms -> 0.150 ms with CUDA events (1.26x)
    assert 1.15 < r.median < 1.30 and r.low <= r.median <= r.high
    assert r.verdict == "gain"


def test_summary_says_tried_no_gain_and_slower():
    v = Verification(status="measured", speedup=1.004, low=0.99, high=1.01, pairs=5, estimated=1.27,
                     device="NVIDIA H100 80GB HBM3")
    assert v.no_gain and v.summary("H100") == "tried: no gain (measured 1.00x (0.99-1.01), estimated 1.27x, H100)"
    assert Verification(status="measured", speedup=0.8, low=0.79, high=0.81, estimated=1.2).summary().startswith("tried: slower")
    ok = Verification(status="measured", speedup=1.31, low=1.28, high=1.34, estimated=1.27)
    assert not ok.no_gain and ok.summary("H100") == "measured 1.31x (1.28-1.34), est. 1.27x, H100"
    assert ok.effective == 1.31
