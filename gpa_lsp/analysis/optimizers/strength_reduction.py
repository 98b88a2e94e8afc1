"""Strength Reduction: slow arithmetic -- conversions, MUFU, FP64, POPC, and integer division.

Two parts:

* GPA's rule: stalls blamed on long fixed-latency defs (conversions such as
  the F2F of a double literal in float code, MUFU, FP64, POPC), plus
  pipe-throttle samples on them;
* integer division and modulo by a run-time value. sm_90 has no integer
  divider: nvcc expands ``a / b`` into ~20 instructions around a
  floating-point reciprocal (IABS, ``I2F.RP``, ``MUFU.RCP``, ``IADD 0xffffffe``,
  ``F2I.FTZ.U32.TRUNC``, two ``IMAD.HI.U32``, the remainder and two correction
  steps, sign and divide-by-zero fix-ups). Those are ordinary short integer
  instructions: their cost is not a stall on a slow def but issue slots and
  pipe throttling, so GPA's blame-based rule sees ~1% of it. The ``I2F.RP ->
  MUFU.RCP`` pair marks each expansion. With D expansions on a source line
  (-lineinfo puts the sequence on the line of the ``/``) and n instructions of
  the line seen issuing, a share min(1, D x (L - k) / n) of the line's samples
  is matched, L = 20 the expansion's length and k = 3 what a multiply-shift by
  a precomputed reciprocal (or a shift, for a power of two) costs.

* float division by a loop-invariant value (``x / kappa`` in a tap loop, kappa a kernel argument).
  nvcc inlines each IEEE division as MUFU.RCP, two FFMA refining the reciprocal, FCHK, three FFMA
  refining the quotient and a branch around the slow-path call (with BSSY/BSYNC): ~10 issued
  instructions, all but the last three depending only on the divisor, yet redone every iteration
  (the FCHK's branch keeps nvcc from hoisting them). A reciprocal computed once before the loop
  leaves one FMUL. Matched like the integer division: min(1, D x (L - 1) / n) of the line's samples,
  D the line's FCHKs whose divisor is loop-invariant (its defs in the loop are constant-bank loads or
  come from outside it and the body never writes them), L = 10. Calibration: kernels/perona_malik's
  inv_kappa (1 / kappa hoisted out of the tap loop: 43.5 -> 34.5 instructions per tap) measured
  1.25x, priced 1.24x (was 1.01x); its ``g / (1 + r^2)`` divides by an induction variable's value and
  is not matched.

Estimator: stall elimination (Eq. 2).
"""

from __future__ import annotations

from ...sass.defuse import DefIndex
from ...sass.opcodes import BIT_COUNTS, CONVERSIONS, FP64, MUFU
from ..context import kernel_fact
from ..model import Fix
from ..sources import double_literals, source_line
from .base import Match, Optimizer, hottest, match_edges

SLOW = CONVERSIONS | MUFU | FP64 | BIT_COUNTS
DIVISION_LENGTH = 20   # instructions of nvcc's 32-bit integer division expansion (sm_90)
REDUCED_LENGTH = 3     # IMAD.HI/IMAD.WIDE.U32 + SHF (+ IMAD for the remainder)


# issued instructions of nvcc's inlined IEEE float division (CUDA 13, sm_90, fast path): MUFU.RCP, two
# FFMA refining the reciprocal, FCHK, three FFMA for the quotient, BSSY, the branch around the slow-path
# CALL, BSYNC (kernels/perona_malik's SASS)
FLOAT_DIVISION_LENGTH = 10


def _invariant(function, defs: DefIndex, body: frozenset[int], index: int, reg: str, depth: int = 0) -> bool:
    """Whether ``reg`` read at ``index`` holds the same value every iteration of the loop ``body``: its
    nearest def before it (layout order) is outside the body and the body never writes it, or is a
    constant-bank load, or is computed in the body from such values only."""
    if depth > 6:
        return False
    k = defs.before(index, reg)
    if k is None:
        return True     # no def before it: a value from before the kernel's first instruction
    if k not in body:
        # defined before the loop: invariant unless the body also writes it (after this use in layout
        # order: a value carried around the back edge, an induction variable)
        return not defs.written_in(reg, body)
    d = function.instructions[k]
    if d.memory is not None:
        return d.memory.space == "constant"
    srcs = [r for r in d.srcs if r not in ("RZ", "PT", "URZ", "UPT")]
    return all(_invariant(function, defs, body, k, r, depth + 1) for r in srcs)


@kernel_fact
def invariant_divisions(ctx) -> dict[tuple[str, int], int]:
    """(file, line) -> FCHKs (IEEE float divisions) in a loop whose divisor is loop-invariant."""
    out: dict[tuple[str, int], int] = {}
    for fb in ctx.blames:
        fn = fb.function
        defs = None
        for k, ins in enumerate(fn.instructions):
            if ins.base_opcode != "FCHK" or ins.loc is None or len(ins.operands) < 3:
                continue
            lp = ctx.loop_of(ins.offset)
            if lp is None:
                continue
            defs = defs or DefIndex(fn.instructions)
            divisor = ins.operands[2].lstrip("-|").rstrip("|")
            if divisor.startswith("R") and _invariant(fn, defs, lp.instructions, k, divisor.split(".")[0]):
                key = (ins.loc.file, ins.loc.line)
                out[key] = out.get(key, 0) + 1
    return out


def is_division_core(ins) -> bool:
    """The ``I2F.RP`` that starts the reciprocal of an integer division (rounding toward +inf)."""
    return ins.base_opcode == "I2F" and ".RP" in ins.opcode


@kernel_fact
def division_weights(ctx) -> dict[tuple[str, int], float]:
    """(file, line) -> share of the line's samples spent in integer-division expansions and in float
    divisions by a loop-invariant value."""
    executed: dict[tuple[str, int], int] = {}
    cores: dict[tuple[str, int], int] = {}
    issued = ctx.issued_at      # the sampled PCs (ctx.pcs), each with its issued samples
    # the division cores first: most kernels have none, and then no line's count is needed
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            if ins.loc is not None and is_division_core(ins) and issued.get(ins.offset, 0) > 0:
                key = (ins.loc.file, ins.loc.line)
                cores[key] = cores.get(key, 0) + 1
    floats = invariant_divisions(ctx)
    if not cores and not floats:
        return {}
    for fb in ctx.blames:       # counts: the order of the walk does not matter
        for ins in fb.function.instructions:
            loc = ins.loc
            if loc is not None and issued.get(ins.offset, 0) > 0:
                key = (loc.file, loc.line)
                executed[key] = executed.get(key, 0) + 1
    out = {key: d * (DIVISION_LENGTH - REDUCED_LENGTH) for key, d in cores.items()}
    for key, d in floats.items():
        out[key] = out.get(key, 0) + d * (FLOAT_DIVISION_LENGTH - 1)
    return {key: min(1.0, n / executed[key]) for key, n in out.items() if executed.get(key)}


class StrengthReduction(Optimizer):
    id = "strength_reduction"
    cuts_issue = True
    title = "Strength Reduction"
    suggestion = ("Stalls wait on slow arithmetic: float<->double conversions (double literals such as 0.5 "
                  "in float code), FP64, special functions or integer division. Use float literals (0.5f), "
                  "float math, multiplications by reciprocals, shifts for powers of two.")

    def match(self, ctx) -> Match | None:
        divisions = division_weights(ctx)
        if not divisions and not any(i.base_opcode in SLOW for fb in ctx.blames for i in fb.function.instructions):
            return None     # keep holds for no edge: no slow def and no division line
        site_of = ctx.site
        slow: dict[int, bool | None] = {}     # def offset -> a slow opcode (None: no such site)
        division: dict[int, object] = {}      # use offset -> the division share of its line

        def keep(e):
            d = e.def_
            if d in slow:
                is_slow = slow[d]
            else:
                site = site_of(d)
                is_slow = slow[d] = None if site is None else site.instruction.base_opcode in SLOW
            if is_slow is None:
                return False
            if is_slow:
                if e.category == "self":
                    if e.reason == "pipe_busy":
                        return True
                elif e.category == "arithmetic":
                    return True
            if divisions:
                w = division.get(e.use)
                if w is None:
                    use = site_of(e.use)
                    loc = use.instruction.loc if use else None
                    w = division[e.use] = divisions.get((loc.file, loc.line), 0.0) if loc is not None else False
                return w
            return False
        # without division lines keep holds only for arithmetic defs and pipe_busy at the def itself:
        # those categories' edges, in edges order
        return match_edges(ctx.edges if divisions else ctx.edges_where(categories=("self", "arithmetic")), keep)

    def fix(self, ctx, match: Match) -> Fix | None:
        for off, _ in hottest(match.edges):
            loc = ctx.location(off)
            if loc is None:
                continue
            text = source_line(ctx.reader, loc.file, loc.line)
            if text is None:
                continue
            cols = double_literals(text)
            if cols:
                return Fix("float_literal", loc.file, loc.line, {"columns": [list(c) for c in cols]})
        return None
