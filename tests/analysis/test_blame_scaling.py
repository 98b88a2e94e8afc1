"""The blamer on many loops in sequence (issue 16, item 12): each loop may run zero times, so without
pruning every earlier loop's defs stay alive after it (quadratic time and memory). Defs past the
longest latency that can still stall are pruned during the fixpoint: the work grows linearly, and
the blame is the same as without pruning."""

from __future__ import annotations

import pytest

import gpa_lsp.analysis.blame as blame
from gpa_lsp.profile.model import PCStats
from gpa_lsp.sass.model import Control, Function, Instruction


def _ins(k: int, op: str, dsts=(), srcs=(), pred=None, neg=False, target=None, wb=None, wait=0, stall=4):
    return Instruction(16 * k, op, (), pred, neg, frozenset(dsts), frozenset(srcs) | ({pred} if pred else set()),
                       branch_target=target, control=Control(stall, False, wb, None, wait, 0))


def many_loops(n: int) -> tuple[Function, dict[int, PCStats]]:
    """``n`` loops in sequence, each skipped when its trip count is 0: load, accumulate, count."""
    ins = [_ins(0, "S2R", ["R5"]), _ins(1, "IADD3", ["R0"]), _ins(2, "IADD3", ["R4"])]
    for _ in range(n):
        k = len(ins)
        body, exit_ = k + 2, k + 8
        ins += [_ins(k, "ISETP.GE.AND", ["P0"], ["R5"]),
                _ins(k + 1, "BRA", pred="P0", target=16 * exit_),
                _ins(k + 2, "LDG.E", ["R2"], ["R4"], wb=0),
                _ins(k + 3, "IADD3", ["R4"], ["R4"]),
                _ins(k + 4, "FFMA", ["R0"], ["R0", "R2"], wait=1),
                _ins(k + 5, "IADD3", ["R5"], ["R5"]),
                _ins(k + 6, "ISETP.GE.AND", ["P0"], ["R5"]),
                _ins(k + 7, "BRA", pred="P0", neg=True, target=16 * body)]
    k = len(ins)
    ins += [_ins(k, "STG.E", (), ["R0", "R4"]), _ins(k + 1, "EXIT")]
    fn = Function("f", ".text.f", True, 0, 16 * len(ins), instructions=tuple(ins))
    samples = {x.offset: PCStats("x", "f", x.offset, (("long_scoreboard", 7), ("wait", 3)), (("long_scoreboard", 5),))
               for x in ins}
    return fn, samples


def _state_entries(monkeypatch, fn, samples, prune: bool) -> tuple[int, list]:
    """(reaching-def entries over all block exits of the last fixpoint round, the blame edges)."""
    sizes: dict[int, int] = {}
    real_transfer, real_prepare = blame._transfer, blame._prepare

    def transfer(flow, prep, b, state, record, wanted):
        out = real_transfer(flow, prep, b, state, record, wanted)
        sizes[b] = sum(len(es) for es in out.values())
        return out

    monkeypatch.setattr(blame, "_transfer", transfer)
    if not prune:
        monkeypatch.setattr(blame, "_prepare", lambda function, sm=None: real_prepare(function, None))
    edges = sorted(blame.blame_function(fn, samples).edges)
    monkeypatch.undo()
    return sum(sizes.values()), edges


def test_reaching_definitions_grow_linearly_with_loops_in_sequence(monkeypatch):
    small, _ = _state_entries(monkeypatch, *many_loops(50), prune=True)
    large, _ = _state_entries(monkeypatch, *many_loops(400), prune=True)
    assert large / small < 8 * 1.2, (small, large)                # 8x the loops: about 8x the entries
    unpruned_small, _ = _state_entries(monkeypatch, *many_loops(50), prune=False)
    unpruned_large, _ = _state_entries(monkeypatch, *many_loops(400), prune=False)
    assert unpruned_large / unpruned_small > 30                   # what the pruning removes: quadratic


@pytest.mark.parametrize("n", [1, 3, 40])
def test_pruning_changes_no_blame(monkeypatch, n):
    fn, samples = many_loops(n)
    _, pruned = _state_entries(monkeypatch, fn, samples, prune=True)
    _, full = _state_entries(monkeypatch, fn, samples, prune=False)
    assert pruned == full
