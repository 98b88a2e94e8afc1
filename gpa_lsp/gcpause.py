"""``gc_paused()``: the cyclic garbage collector off for a block that builds or reads a large
acyclic structure.

Why: building a Program (10^5 ``Instruction`` tuples and their operand tuples) and analysing one
(10^5 small tuples of blame) allocate a great many container objects and create no reference
cycles. Each few thousand allocations trigger a collection, and the older generations' collections
rescan everything alive, the large Program included, again and again: time spent finding no
garbage. Reference counting still frees everything as usual; only the cycle search waits.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector disabled inside the block, restored as it was (nesting is fine)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
