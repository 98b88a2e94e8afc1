"""Register Reuse: the cost of register spills (``STL``/``LDL`` to the stack frame).

What a spill costs, and why all of it is matched:

* the refill ``LDL`` is a long-latency load: memory-dependency stalls of its
  users are blamed on it (``local_memory``);
* the spill ``STL`` reads a register that the next refill overwrites: the
  write-after-read stall (read scoreboard) is blamed on the ``STL``;
* the spill instructions themselves take issue slots and, above all, entries
  of the LSU's local/global (LG) queue: their own ``lg_throttle`` samples
  (memory throttle), issue and not-selected samples are self samples on them;
* the other loads and stores wait behind them in that queue: their
  ``lg_throttle`` x the spills' share of the queue's entries (optimizers/shared.py).

Removing the spills (more registers, shorter live ranges) deletes those
instructions, so every sample on them and every stall they cause vanishes:
stall elimination (Eq. 2) over all of it. GPA's original matched only the
``LDL`` blame; on Hopper a spill-bound kernel spends most of its samples in
``lg_throttle`` on the spill instructions themselves, which that misses.

Which local accesses are spills: ``shared.is_spill`` (Local Array takes the others).
"""

from __future__ import annotations

from .base import Match, Optimizer
from .shared import local_cost


class RegisterReuse(Optimizer):
    id = "register_reuse"
    keeps = ()   # spills are local-memory traffic at every level
    title = "Register Reuse"
    suggestion = ("Time goes to register spills: local-memory stores and refills, their LSU queue throttling "
                  "and the waits on them. Reduce register pressure (shorter live ranges, fewer live "
                  "accumulators per thread), or allow more registers (__launch_bounds__ min-blocks, "
                  "-maxrregcount).")

    def match(self, ctx) -> Match | None:
        return local_cost(ctx, spill=True)

    def explained_throttle(self, ctx) -> dict[int, float]:
        """The memory-throttle samples of the spill instructions and of the queue they fill: removing
        the spills removes their LG-queue entries."""
        m = local_cost(ctx, spill=True)
        return m.throttle_by_use() if m is not None else {}
