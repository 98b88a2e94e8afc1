"""Short run-time trip counts: loops nvcc unrolled whose unrolled body rarely runs.

Mechanism. nvcc unrolls a loop whose trip count is a run-time value (by 4, 8 or 16) and adds the
code for the iterations left over: peeled copies of the body and a remainder loop, each iteration
paying its loop control, its own address arithmetic and the tests that dispatch between the
copies. When the trip count is short (a 5 x 5 filter's 5 taps a row), the unrolled body seldom or
never runs and nearly every iteration goes through that leftover code. Making the trip count a
compile-time constant (a template parameter, a ``constexpr``) lets nvcc unroll the loop fully:
straight-line code whose addresses are immediate offsets of one base, the loop control gone.

What it is priced from. The unrolled body nvcc already emitted for the same loop is the steady
state a full unroll reaches or betters (its copies share one loop control and fold their offsets):
its instructions per *payload* instruction (memory accesses and floating-point work, the part an
unroll keeps) are the cost per payload after the change. The loop that encloses the unrolled body
(or the function) is what runs per trip -- the body, the peeled copies, the remainder and the
dispatch -- and its executed instructions per executed payload are the cost now (ncu's
per-instruction executed counts, else the sampled warps' own issue samples, ``selected``, which
are proportional to them). The instructions the change saves are the enclosing loop's executed
instructions less its executed payload at the body's cost.

The estimate is the kernel's instructions over what is left (time in proportion to the issued
instructions): in the two calibration cases the fully unrolled code kept the kernel's issue share
of peak, so the stalls left shrank with the instructions (kernels/filter2d_5x5: 1.71x priced,
const_radius measured 1.86x; kernels/structure_tensor: 1.88x, 1.81x). The low end of the range
shrinks only the issue slots (``(1 - U) + U x left``, U the issue share of peak): the other cycles
as they were (1.47x and 1.64x there).

The nest a developer makes constant climbs through the enclosing loops bounded by the same
parameters, or unrolled by nvcc too with a launch-invariant bound (a 3 x 3 filter's row loop);
what runs per trip is the code on the nest's source lines inside the loop that stays (its peeled
copies, remainder and dispatch; not that loop's own control, nor another loop of the function). A
trip count is short when the unrolled body issues under ``SHORT_SHARE`` of that code: a row walk
of 64-128 elements runs its unrolled body for nearly all of it and has nothing to fold.

Only trip counts a developer can make constant are priced: the loop's exit test compares against a
value computed from kernel parameters and literals, not one loaded from memory (a CSR row length)
or derived from the thread's index (a triangular loop, a grid-stride walk).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..sass.arch import latency_class
from ..sass.defuse import DefIndex
from ..sass.opcodes import BRANCHES
from .context import KernelContext, kernel_fact

# what an unroll keeps: the memory accesses and the arithmetic on the data (sass.arch classes)
PAYLOAD_CLASSES = frozenset({"memory", "shared_memory", "mufu", "fp16", "fp32", "fp64", "tensor", "conversion"})
# the thread's position: a trip count computed from it is not one constant for the launch
THREAD_REGISTERS = ("SR_TID", "SR_CTAID", "SR_LANEID", "SR_NTID", "SR_NCTAID", "SR_GRIDID")
# savings under this share of the kernel's instructions are not reported (the sampled issue
# counts' noise on a few thousand samples is of this order)
MIN_SAVED = 0.05
# a trip count is short when the unrolled body issues under this share of what the loop's code
# issues (calibration: 0% in filter2d_5x5 and unsharp_mask's 5-tap rows, 41% in structure_tensor's
# radius-2 window, 49-50% in chan_stencil_taps' 5 taps unrolled by 4 -- one pass of the body and
# one remainder iteration, on 0.5 itself in its CUPTI bundle; long: perona_malik's 71%, conv1d_taps'
# 75-77%, a row walk of 64-128 elements 78% and more)
SHORT_SHARE = 0.6


@dataclass(frozen=True)
class ShortTrip:
    """One loop whose run-time trip count is short for nvcc's unroll."""

    function: str
    header: int           # the unrolled body's loop header offset
    file: str | None
    line: int | None      # the source loop's line
    factor: int           # copies of an iteration in the unrolled body
    body_cost: float      # instructions per payload instruction in the unrolled body
    run_cost: float       # executed instructions per executed payload in the enclosing loop
    saved: float          # share of the kernel's issued instructions the full unroll removes
    region: frozenset[int]  # instruction indices of what runs per trip (the enclosing loop or function)

    def estimate(self) -> float:
        """Time in proportion to the issued instructions (the module docstring)."""
        return 1.0 / (1.0 - self.saved)

    def issue_only(self, issue_share: float) -> float:
        """The instructions saved in the issue slots only, the other cycles as they were."""
        u = min(max(issue_share, 0.0), 1.0)
        return 1.0 / ((1.0 - u) + u * (1.0 - self.saved))


def is_payload(ins) -> bool:
    """Memory accesses (not constant-bank reads) and arithmetic on the data: what an unroll keeps."""
    if ins.memory is not None and ins.memory.space == "constant":
        return False
    return latency_class(ins) in PAYLOAD_CLASSES


def unroll_factor(function, body) -> int:
    """Copies of one iteration in a loop body: the fewest payload instructions of one source line and
    opcode (every statement of an unrolled body has a copy per iteration; a rolled loop has a
    statement with one, even where a line holds two loads)."""
    ins = function.instructions
    groups = Counter((ins[k].loc.line if ins[k].loc else None, ins[k].opcode) for k in body if is_payload(ins[k]))
    if not groups:
        return 1
    return min(groups.values())


def _words(ins) -> set[tuple[int, int]]:
    """The constant-bank words an instruction reads (a ``.64`` load reads two)."""
    n = 4 if ".128" in ins.opcode else 2 if ".64" in ins.opcode else 1
    return {(bank, off + 4 * i) for bank, off in ins.cbank if off is not None for i in range(n)}


def bound_parameters(function, body, defs: DefIndex | None = None) -> frozenset[tuple[int, int]] | None:
    """The constant-bank words (kernel parameters) the loop's exit tests compare against, or None when
    the bound is not launch-invariant. For each exit test of the body (a conditional branch that
    leaves it, or the back edge, whose fall-through does: not a test inside the body such as a
    stencil's bounds check, which decides whether a tap runs, not how many), its predicate's def
    in the body and the values its operands have on entering the loop (the bound, and the induction
    variable's start: nvcc counts a remainder loop down to zero from a value computed from the
    bound) are traced back, each use to the nearest def before it in layout order (the code before
    a loop dominates it in nvcc's layout); a memory load or the thread's position on the way makes
    it None (a CSR row length, a triangular or grid-stride trip count). ``defs``: the function's
    ``DefIndex`` when the caller holds one."""
    ins = function.instructions
    defs = defs or DefIndex(ins)
    before = defs.before

    first = min(body)
    inside = {ins[k].offset for k in body}
    header = ins[first].offset
    todo: list[int] = []
    words: set[tuple[int, int]] = set()
    for k in body:
        x = ins[k]
        if x.base_opcode not in BRANCHES or not x.predicate:
            continue
        if x.branch_target in inside and x.branch_target != header:
            continue        # a test inside the loop (where the taken path stays in it)
        d = before(k, x.predicate)
        if d is None or d not in body:
            continue
        tests = [d]          # the compare, through the predicate logic that combines compares
        while tests:
            t = tests.pop()
            words |= _words(ins[t])
            for r in ins[t].srcs:
                e = before(t, r)
                if e is not None and e in body:
                    if r.lstrip("U").startswith("P"):
                        tests.append(e)
                    elif ins[e].memory is not None and ins[e].memory.space == "constant":
                        words |= _words(ins[e])     # the bound reloaded from the constant bank in the loop
                # the bound, and the induction variable's value on entry (nvcc counts a remainder
                # loop down to zero from a value computed from the bound): both set the trip count
                e = before(first, r)
                if e is not None:
                    todo.append(e)
    seen: set[int] = set()
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        y = ins[d]
        if y.memory is not None and y.memory.space != "constant":
            return None
        if any(t in op for op in y.operands for t in THREAD_REGISTERS):
            return None
        words |= _words(y)
        todo += [e for r in y.srcs if (e := before(d, r)) is not None]
    return frozenset(words) or None


def _weights(ctx: KernelContext) -> dict[int, int]:
    """Issued instructions per PC: ncu's executed counts where the profile has them, else the sampled
    warps' own issue samples (``selected``), proportional to them."""
    executed = {o: p.executed for o, p in ctx.pcs.items() if p.executed}
    return executed or ctx.selected_at


@kernel_fact
def short_trips(ctx: KernelContext) -> tuple[ShortTrip, ...]:
    """Every unrolled loop of the kernel whose run-time trip count is short (the module docstring)."""
    w = _weights(ctx)
    out: list[ShortTrip] = []
    total = sum(w.get(x.offset, 0) for fb in ctx.blames for x in fb.function.instructions)
    if total <= 0:
        return ()
    for fb in ctx.blames:
        fn = fb.function
        ins = fn.instructions
        offs = [x.offset for x in ins]
        scopes = ctx.loops.get(fn.name, ())
        defs = DefIndex(ins)
        bounds: dict[int, frozenset | None] = {}

        def bound(scope):
            if scope.header_offset not in bounds:
                bounds[scope.header_offset] = bound_parameters(fn, scope.instructions, defs)
            return bounds[scope.header_offset]
        by_header = {s.header_offset: s for s in scopes}
        inner: dict[int | None, set[int]] = {}
        for s in scopes:
            inner.setdefault(s.parent, set()).update(s.instructions)

        def factor_of(scope) -> int:
            """Copies of an iteration in the loop's own code (not a nested loop's)."""
            return unroll_factor(fn, scope.instructions - inner.get(scope.header_offset, set()))
        for s in scopes:
            factor = factor_of(s)
            params = bound(s) if factor >= 2 else None
            if not params:
                continue
            paid = sum(1 for k in s.instructions if is_payload(ins[k]))
            # what runs per trip: climbing through the enclosing loops bounded by the same parameters
            # or unrolled by nvcc too with a launch-invariant bound (the nest a developer makes
            # constant: their setup of the inner loop goes), the instructions on the nest's source
            # lines in the loop that stays (its peeled copies, remainder and dispatch, wherever nvcc
            # put them; not that loop's own control, nor another loop of the same function)
            nest, outer = s, by_header.get(s.parent)
            while outer is not None and bound(outer) and (bound(outer) & params or factor_of(outer) >= 2):
                nest, outer = outer, by_header.get(outer.parent)
            lines = {ins[k].loc.line for k in nest.instructions if ins[k].loc}
            run = [k for k in (outer.instructions if outer is not None else range(len(ins)))
                   if ins[k].loc and ins[k].loc.line in lines]
            executed = sum(w.get(offs[k], 0) for k in run)
            payload = sum(w.get(offs[k], 0) for k in run if is_payload(ins[k]))
            if not paid or not payload:
                continue
            # short for nvcc's unroll: the unrolled body seldom runs (a long trip count runs it)
            if sum(w.get(offs[k], 0) for k in s.instructions) >= SHORT_SHARE * executed:
                continue
            body_cost = len(s.instructions) / paid
            saved = (executed - payload * body_cost) / total
            if saved < MIN_SAVED:
                continue
            out.append(ShortTrip(fn.name, s.header_offset, s.file, s.line, factor, body_cost,
                                 executed / payload, saved, frozenset(run)))
    # an enclosing loop whose own copies are a nested loop's peeled iterations prices that loop again:
    # the innermost one stands
    headers = {(t.function, t.header) for t in out}
    nested = {(t.function, t.header) for t in out for s in ctx.loops.get(t.function, ())
              if (t.function, s.header_offset) in headers and s.parent == t.header}
    return tuple(sorted((t for t in out if (t.function, t.header) not in nested), key=lambda t: -t.saved))
