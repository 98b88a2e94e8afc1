"""A new optimizer is one class and one registration: nothing else changes.

The toy optimizers here live only in this file. They are registered through the registry's API,
and the advisor matches, estimates, places and ranks them like the built-in ones on a recorded
bundle (kernels/hotspot_double: float code with double literals, so FP64 stalls).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.optimizers import REGISTRY, Estimator, Match, Optimizer, by_id, register, unregister
from gpa_lsp.analysis.optimizers.base import match_edges
from gpa_lsp.config import load
from gpa_lsp.sass.opcodes import FP64

CASE = Path(__file__).resolve().parents[2] / "kernels" / "hotspot_double"
BUNDLE = CASE / "recorded" / "cupti.gpabundle"


class DoubleStalls(Optimizer):
    """Every stall blamed on a double-precision instruction: removing them is stall elimination."""
    id = "toy_double_stalls"
    title = "Toy: FP64 stalls"
    method = Estimator.stall_elimination
    suggestion = "The toy says: these stalls wait on double-precision arithmetic."

    def match(self, ctx) -> Match | None:
        def keep(e):
            site = ctx.site(e.def_)
            return site is not None and site.instruction.base_opcode in FP64
        return match_edges(ctx.edges, keep)


class GenericCopy(Optimizer):
    """Strength Reduction's match and estimate under another id: a tie that ``generic`` decides."""
    title = "Toy: generic copy"

    def __init__(self, optimizer_id: str, generic: bool):
        self.id = optimizer_id
        self.generic = generic
        self._of = by_id("strength_reduction")
        self.method = self._of.method

    def match(self, ctx):
        return self._of.match(ctx)

    def estimate(self, ctx, match):
        return self._of.estimate(ctx, match)


@pytest.fixture
def registered():
    added: list[str] = []

    def add(opt: Optimizer) -> Optimizer:
        register(opt)
        added.append(opt.id)
        return opt
    yield add
    for optimizer_id in added:
        unregister(optimizer_id)


def _kernel(report):
    return next(k for k in report.kernels if "calculate_temp" in (k.demangled or k.name))


def test_a_registered_optimizer_gives_advice(registered):
    toy = registered(DoubleStalls())
    assert toy in REGISTRY
    kernel = _kernel(advise_bundle(BUNDLE, config=load(CASE)))
    advice = {a.optimizer: a for a in kernel.advice}
    assert toy.id in advice, [a.optimizer for a in kernel.advice]
    got = advice[toy.id]
    assert got.title == toy.title and got.kind == "code" and got.suggestion == toy.suggestion
    assert got.estimated_speedup > 1.0 and got.matched_samples > 0
    assert got.location is not None and got.location.file.endswith("original.cu")
    # the built-in advice is still there and still first
    assert kernel.advice[0].optimizer == "strength_reduction"


def test_unregistered_it_is_gone(registered):
    registered(DoubleStalls())
    assert unregister(DoubleStalls.id) is not None
    assert by_id(DoubleStalls.id) is None
    assert all(a.optimizer != DoubleStalls.id for a in _kernel(advise_bundle(BUNDLE, config=load(CASE))).advice)


def test_an_id_is_registered_once(registered):
    registered(DoubleStalls())
    with pytest.raises(ValueError):
        register(DoubleStalls())


def test_generic_advice_ranks_after_the_specific_one_it_ties_with(registered):
    # ids that sort before strength_reduction: without ``generic`` the copy would come first
    registered(GenericCopy("a_specific_copy", generic=False))
    registered(GenericCopy("a_generic_copy", generic=True))
    ids = [a.optimizer for a in _kernel(advise_bundle(BUNDLE, config=load(CASE))).advice]
    assert ids.index("a_specific_copy") < ids.index("strength_reduction") < ids.index("a_generic_copy")


class ThrottleOwner(Optimizer):
    """Claims every memory-throttle sample of the kernel through ``explained_throttle``: the
    generic Memory Transaction Reduction must leave all of it to this specific optimizer."""
    id = "toy_throttle_owner"
    title = "Toy: owns the memory throttle"

    def _throttle(self, ctx):
        return [e for e in ctx.edges if e.reason == "memory_throttle"]

    def match(self, ctx) -> Match | None:
        return match_edges(self._throttle(ctx))

    def explained_throttle(self, ctx) -> dict[int, float]:
        out: dict[int, float] = {}
        for e in self._throttle(ctx):
            out[e.use] = out.get(e.use, 0.0) + e.stall
        return out


def test_a_specific_optimizer_takes_its_throttle_from_the_generic_one(registered):
    before = {a.optimizer: a for a in _kernel(advise_bundle(BUNDLE, config=load(CASE))).advice}
    assert before["memory_transaction_reduction"].matched_samples > 0
    toy = registered(ThrottleOwner())
    after = {a.optimizer: a for a in _kernel(advise_bundle(BUNDLE, config=load(CASE))).advice}
    # the toy's declaration alone (no other file changed) takes the throttle from the generic advice
    assert toy.id in after
    assert "memory_transaction_reduction" not in after, after["memory_transaction_reduction"].matched_samples
    # and only that: the other advice is as it was
    assert {k: v.estimated_speedup for k, v in after.items() if k != toy.id} == \
        {k: v.estimated_speedup for k, v in before.items() if k != "memory_transaction_reduction"}
