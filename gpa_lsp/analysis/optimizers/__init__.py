"""The optimizer registry: one module per optimizer, all behind optimizers.base.Optimizer.

A built-in optimizer is one module here and one entry in ``REGISTRY``; another one (a plugin, a
test) is added with :func:`register` and taken out with :func:`unregister`. The advisor reads
``REGISTRY`` when it runs, so a registered optimizer is matched, estimated and ranked like the
built-in ones.
"""

from __future__ import annotations

from .atomic_privatization import AtomicPrivatization
from .base import REGISTRY, ChangeKind, Estimator, Match, Optimizer
from .block_increase import BlockIncrease
from .code_reordering import CodeReordering
from .fast_math import FastMath
from .function_inlining import FunctionInlining
from .function_split import FunctionSplit
from .global_memory_coalescing import GlobalMemoryCoalescing
from .local_array import LocalArray
from .loop_no_unroll import LoopNoUnroll
from .loop_unrolling import LoopUnrolling
from .memory_transaction_reduction import MemoryTransactionReduction
from .register_reuse import RegisterReuse
from .restrict_pointer import RestrictPointer
from .shared_memory_bank_conflicts import SharedMemoryBankConflicts
from .strength_reduction import StrengthReduction
from .thread_increase import ThreadIncrease
from .warp_balance import WarpBalance
from .warp_divergence import WarpDivergence

REGISTRY[:] = [   # the built-in optimizers, in the order they run and tie
    RegisterReuse(), LocalArray(), StrengthReduction(), FunctionSplit(), FastMath(), WarpBalance(),
    AtomicPrivatization(), MemoryTransactionReduction(), GlobalMemoryCoalescing(), SharedMemoryBankConflicts(), LoopUnrolling(),
    LoopNoUnroll(), CodeReordering(), FunctionInlining(), RestrictPointer(), WarpDivergence(),
    BlockIncrease(), ThreadIncrease(),
]


def register(optimizer: Optimizer) -> Optimizer:
    """Add ``optimizer`` to the registry (after the built-in ones); its ``id`` must be new."""
    if not optimizer.id:
        raise ValueError(f"{type(optimizer).__name__} has no id")
    if by_id(optimizer.id) is not None:
        raise ValueError(f"an optimizer with id {optimizer.id!r} is already registered")
    REGISTRY.append(optimizer)
    return optimizer


def unregister(optimizer_id: str) -> Optimizer | None:
    """Take the optimizer with this id out of the registry; it is returned (None when there was none)."""
    got = by_id(optimizer_id)
    if got is not None:
        REGISTRY.remove(got)
    return got


def by_id(optimizer_id: str) -> Optimizer | None:
    for o in REGISTRY:
        if o.id == optimizer_id:
            return o
    return None


__all__ = ["REGISTRY", "ChangeKind", "Estimator", "Match", "Optimizer", "by_id", "register", "unregister"]
