"""Fast Math: time in the CUDA math library's precise single-precision paths.

Where that code is in the SASS (CUDA 13, sm_90):

* rare slow paths that nvcc keeps out of line, as non-entry functions named
  ``$__internal_<n>_$__cuda_sm3x_div_rn_...``-like or ``__nv_...``, or code
  whose line info points into the CUDA headers: matched as before;
* the common paths of ``powf``, ``expf``, ``sinf``... are *inlined* into the
  caller. With ``-lineinfo`` libdevice code carries no inline chain: all of
  its instructions (range reduction, the extra-precision logarithm of
  ``powf``, the Payne-Hanek branch of ``sinf``) are attributed to the
  calling source line. A line that calls ``powf, expf, sinf`` compiles to
  ~230 instructions where the intrinsics take 7.

So for a source line that calls precise float math functions with a fast
counterpart, the samples of its instructions are library work, except for
what the intrinsics still cost. With n the line's instructions seen issuing
and k the summed instruction counts of the intrinsics (``__sinf``: FMUL.RZ +
MUFU.SIN, ``__powf``: MUFU.LG2 + FMUL + MUFU.EX2, ...), each sample on the
line is matched with weight max(0, 1 - k/n): a line built with
--use_fast_math already has n ~ k and matches nothing.

IEEE float divisions are the same kind of work: nvcc inlines each ``a / b`` (the sequence is described
once, at ``strength_reduction.FLOAT_DIVISION_LENGTH``), which --use_fast_math makes MUFU.RCP and FMUL. A line holding FCHK instructions counts 2 instructions per FCHK in its k
(``DIVISION_FAST_COST``). Calibration: kernels/perona_malik (a division by the run-time kappa and one
by 1 + r^2 per tap beside an expf, at 85% issue): Fast Math 1.20x -> 2.51x, fast_math measured
2.07x; the division lines had been nobody's.

Only arithmetic work is the library's: memory-dependency, memory-throttle and
synchronization samples, and anything blamed on or sampled at a memory
instruction, belong to the caller's loads and stores that share the line (or,
for ``drain``, to warps exiting: the PC sampled after ``EXIT`` can be the
first instruction of the out-of-line slow path placed after the kernel), so
they are never matched, and n counts the line's non-memory instructions.

Estimator: stall elimination (Eq. 2). GPA does not apply fast math when
fetch stalls dominate (the slow path is then Function Split's business);
that guard is kept.
"""

from __future__ import annotations

import re

from ..context import kernel_fact
from ..model import Fix
from ..sources import _code_mask
from .base import Match, Optimizer, match_edges
from .shared import math_library_offsets

# precise float functions -> SASS instructions of the fast intrinsic that --use_fast_math substitutes
FAST_COST = {
    "sinf": 2, "cosf": 2, "sincosf": 3, "tanf": 5, "sinpif": 3, "cospif": 3,
    "expf": 2, "exp2f": 2, "exp10f": 2, "logf": 2, "log2f": 2, "log10f": 2,
    "powf": 3, "sqrtf": 2,
}
_CALL = re.compile(r"(?<![\w.:])(?:std::)?(" + "|".join(sorted(FAST_COST, key=len, reverse=True)) + r")\s*\(")

# an IEEE float division under --use_fast_math: MUFU.RCP and FMUL (its inlined precise path:
# strength_reduction.FLOAT_DIVISION_LENGTH)
DIVISION_FAST_COST = 2

_NOT_LIBRARY = frozenset({"memory_dependency", "memory_throttle", "synchronization"})


def _is_memory(ins) -> bool:
    sp = ins.memory.space if ins.memory is not None else None
    return sp is not None and sp != "constant"


def math_calls(text: str) -> list[str]:
    """Precise float math functions called on a source line (comments and strings ignored)."""
    if _CALL.search(text) is None:
        return []           # most lines call none: no need to find their comments and strings
    mask = _code_mask(text)
    return [m.group(1) for m in _CALL.finditer(text) if mask[m.start(1)]]


def _calls_math(lines) -> bool:
    """Whether any line of a file may call a math function (``math_calls``' first test on its whole
    text: a call on a line is a call in the text, the line break before it being no word character)."""
    if not lines:
        return False
    text = "\n".join(lines)
    # a match holds one of the names: a substring search each is much cheaper than the expression's
    return any(name in text for name in FAST_COST) and _CALL.search(text) is not None


@kernel_fact
def library_weights(ctx) -> dict[tuple[str, int], float]:
    """(file, line) -> share of the line's samples that the intrinsics would remove."""
    executed: dict[tuple[str, int], int] = {}
    issued = ctx.issued_at      # the sampled PCs (ctx.pcs), each with its issued samples
    # IEEE float divisions inlined on a line: one FCHK each (the fast path's range check)
    divisions: dict[tuple[str, int], int] = {}
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            if ins.base_opcode == "FCHK" and ins.loc is not None:
                key = (ins.loc.file, ins.loc.line)
                divisions[key] = divisions.get(key, 0) + 1
    # files none of whose lines calls a math function (_calls_math) or divides need no counts
    calling: dict[str, bool] = {f: True for f, _ in divisions}
    files = {ins.loc.file for fb in ctx.blames for ins in fb.function.instructions if ins.loc is not None}
    if not divisions and not any(_calls_math(ctx.reader(f)) for f in files):
        return {}
    for fb in ctx.blames:       # counts: the order of the walk does not matter
        for ins in fb.function.instructions:
            loc = ins.loc
            if loc is None or issued.get(ins.offset, 0) <= 0:
                continue
            m = ins.memory
            if m is not None and m.space is not None and m.space != "constant":     # _is_memory
                continue
            has = calling.get(loc.file)
            if has is None:
                has = calling[loc.file] = _calls_math(ctx.reader(loc.file))
            if not has:
                continue
            key = (loc.file, loc.line)
            executed[key] = executed.get(key, 0) + 1
    out: dict[tuple[str, int], float] = {}
    for (file, line), n in executed.items():
        lines = ctx.reader(file)
        if not lines or not 1 <= line <= len(lines):
            continue
        calls = math_calls(lines[line - 1])
        div = divisions.get((file, line), 0)
        if not calls and not div:
            continue
        k = sum(FAST_COST[c] for c in calls) + DIVISION_FAST_COST * div
        if n > k:
            out[(file, line)] = 1.0 - k / n
    return out


class FastMath(Optimizer):
    id = "fast_math"
    cuts_issue = True
    title = "Fast Math"
    suggestion = ("Time goes to precise math library code (powf/expf/sinf range reduction and extra-precision "
                  "paths, IEEE division, sqrt). Build with --use_fast_math or call the intrinsics (__powf, "
                  "__expf, __sinf, __fdividef) where the precision allows.")

    def match(self, ctx) -> Match | None:
        if ctx.share("instruction_fetch") > 0.2:
            return None  # GPA: fetch-bound slow paths are Function Split's business
        weights = library_weights(ctx)
        library = math_library_offsets(ctx)
        if not weights and not library:
            return None     # keep's weight is 0 or False for every edge
        site_of = ctx.site
        use_part: dict[int, object] = {}    # use offset -> what keep returns when the def qualifies
        def_ok: dict[int, bool] = {}

        def keep(e):
            w = use_part.get(e.use)
            if w is None:
                site = site_of(e.use)
                if site is None or _is_memory(site.instruction):
                    w = False
                elif e.use in library:
                    w = True
                else:
                    loc = site.instruction.loc
                    w = weights.get((loc.file, loc.line), 0.0) if loc is not None else False
                use_part[e.use] = w
            if w is False:
                return False
            ok = def_ok.get(e.def_)
            if ok is None:
                d = site_of(e.def_)
                ok = def_ok[e.def_] = d is not None and not _is_memory(d.instruction)
            return w if ok else False
        return match_edges(ctx.edges_where(not_reasons=_NOT_LIBRARY), keep)

    def fix(self, ctx, match) -> Fix | None:
        return Fix("fast_math", None, None, {"flag": "--use_fast_math"})
