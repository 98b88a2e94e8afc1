"""Property tests on generated programs: blame is conserved, estimates stay in range."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from gpa_lsp.analysis.blame import blame_function
from gpa_lsp.analysis.estimate import latency_hiding, scoped_latency_hiding, Scope, stall_elimination, thread_increase
from gpa_lsp.profile.model import PCStats
from gpa_lsp.sass.model import Control, Function, Instruction

OPS = ["IADD3", "FFMA", "LDG.E", "LDS", "MUFU.EX2", "F2F.F64.F32", "ISETP.GE.AND", "BRA", "BAR.SYNC", "STG.E"]
REGS = ["R0", "R1", "R2", "R3", "P0", "UR4"]
REASONS = ["long_scoreboard", "short_scoreboard", "wait", "barrier", "no_instructions", "lg_throttle",
           "math_pipe_throttle", "selected", "not_selected", "imc_miss", "misc"]


# the strategies a program is drawn from, built once: building them inside programs() at every
# draw (st.sampled_from, st.sets, ... and their validation) was two thirds of this module's time
OP = st.sampled_from(OPS)
PRED = st.sampled_from([None, "P0", "P0"])
DSTS = st.sets(st.sampled_from(REGS), max_size=2)
SRCS = st.sets(st.sampled_from(REGS), max_size=3)
WRITE_BARRIER = st.sampled_from([None, None, 0, 1, 2, 5])
READ_BARRIER = st.sampled_from([None, None, None, 3])
STALL = st.integers(0, 15)
WAIT_MASK = st.integers(0, 63)
REASON_COUNTS = st.dictionaries(st.sampled_from(REASONS), st.integers(0, 50), max_size=3)


@st.composite
def programs(draw):
    n = draw(st.integers(2, 40))
    ins = []
    for k in range(n):
        op = draw(OP)
        pred = draw(PRED)
        neg = draw(st.booleans())
        dsts = frozenset(draw(DSTS)) if op not in ("BRA", "STG.E", "BAR.SYNC") else frozenset()
        srcs = frozenset(draw(SRCS))
        wb = draw(WRITE_BARRIER)
        rb = draw(READ_BARRIER)
        ctrl = Control(draw(STALL), False, wb, rb, draw(WAIT_MASK), 0)
        target = draw(st.integers(0, n - 1)) * 16 if op == "BRA" else None
        ins.append(Instruction(16 * k, op, (), pred, neg if pred else False, dsts, srcs | ({pred} if pred else set()),
                               branch_target=target, control=ctrl))
    fn = Function("f", ".text.f", True, 0, 16 * n, instructions=tuple(ins))
    samples = {}
    for k in range(n):
        reasons = draw(REASON_COUNTS)
        stalls = tuple(sorted((r, c) for r, c in reasons.items() if c))
        ni = tuple(sorted((r, draw(st.integers(0, c))) for r, c in stalls if r != "selected"))
        if stalls:
            samples[16 * k] = PCStats("x", "f", 16 * k, stalls, ni)
    return fn, samples


@settings(max_examples=150, deadline=None)
@given(programs())
def test_blamed_samples_sum_to_observed_samples(case):
    fn, samples = case
    fb = blame_function(fn, samples)
    assert abs(sum(e.stall for e in fb.edges) - sum(p.total for p in samples.values())) < 1e-6
    assert abs(sum(e.latency for e in fb.edges) - sum(p.latency for p in samples.values())) < 1e-6
    # and per observed instruction
    for off, p in samples.items():
        assert abs(sum(e.stall for e in fb.edges if e.use == off) - p.total) < 1e-6
    assert all(e.stall >= 0 and e.latency >= 0 for e in fb.edges)
    offsets = {i.offset for i in fn.instructions}
    assert all(e.def_ in offsets for e in fb.edges)


totals = st.integers(1, 10 ** 6)


@given(totals, st.floats(0, 1), st.floats(0, 1))
def test_estimates_at_least_one_and_latency_hiding_at_most_two(total, lat_share, act_share):
    latency = total * lat_share
    active = (total - latency) * act_share   # A + L <= T
    assert stall_elimination(total, latency) >= 1.0
    lh = latency_hiding(total, latency, active)
    assert 1.0 <= lh <= 2.0 + 1e-9


@given(st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 1000)), min_size=1, max_size=6), totals)
def test_scoped_latency_hiding_between_one_and_two(scopes, total):
    chain = [Scope(k, k - 1 if k else None, a, m) for k, (a, m) in enumerate(scopes)]
    s, _ = scoped_latency_hiding(total, chain)
    assert 1.0 <= s <= 2.0 + 1e-9


@given(st.floats(0.1, 64), st.floats(0, 1), st.integers(1, 1024))
def test_thread_increase_at_least_one(w, p, t):
    assert thread_increase(w, p, t) >= 1.0
