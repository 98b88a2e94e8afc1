"""The optimizer registry: one module per optimizer, all behind optimizers.base.Optimizer."""

from __future__ import annotations

from .base import Match, Optimizer
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

REGISTRY: tuple[Optimizer, ...] = (
    RegisterReuse(), LocalArray(), StrengthReduction(), FunctionSplit(), FastMath(), WarpBalance(),
    MemoryTransactionReduction(), GlobalMemoryCoalescing(), SharedMemoryBankConflicts(), LoopUnrolling(),
    LoopNoUnroll(), CodeReordering(), FunctionInlining(), RestrictPointer(), WarpDivergence(),
    BlockIncrease(), ThreadIncrease(),
)


def by_id(optimizer_id: str) -> Optimizer | None:
    for o in REGISTRY:
        if o.id == optimizer_id:
            return o
    return None


__all__ = ["REGISTRY", "Match", "Optimizer", "by_id"]
