"""Per source line of a kernel: its own samples and reasons, the stalls blamed on its instructions
(by def class and by the line where they were seen), and its SASS: what the hover and the line heat
show.

Written for speed (one pass over 10^5 instructions and blame edges on a large kernel): a line's
slot is a list indexed by the constants below, found once per run of instructions on the same line
(an unrolled statement's instructions are consecutive), not a dict of dicts looked up per
instruction. The sums are added in the same order as a plain loop would (instructions, then
edges), so the floats are the same.
"""

from __future__ import annotations

from collections import defaultdict
from operator import itemgetter

from ..frozen import frozen_new
from .context import KernelContext
from .model import LineStats

# a line's slot: [own samples, issued, reason -> samples, blamed, class -> blamed, (file, line) -> blamed, SASS]
_SAMPLES, _ISSUED, _REASONS, _BLAMED, _CATS, _FROM, _INS = range(7)


def _new_slot() -> list:
    return [0, 0, defaultdict(int), 0.0, defaultdict(float), defaultdict(float), []]


def line_stats(ctx: KernelContext, path_map=lambda p: p) -> tuple[LineStats, ...]:
    """Per source line: own samples, issued, reasons, blamed samples by category and origin, its SASS."""
    own: dict[tuple[str, int], list] = {}
    pcs = ctx.pcs
    total_at, issued_at = ctx.total_at, ctx.issued_at
    last = last_loc = None
    s: list = []
    add = s.append
    reasons: dict = {}
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            loc = ins.loc
            if loc is None:
                continue
            if loc is not last_loc:     # consecutive instructions of a line often share their SourceLoc
                last_loc = loc
                key = (loc.file, loc.line)
                if key != last:
                    s = own.get(key)
                    if s is None:
                        s = own[key] = _new_slot()
                    last = key
                    add = s[_INS].append
                    reasons = s[_REASONS]
            off = ins.offset
            p = pcs.get(off)
            text = ins.text or f"{ins.opcode} {', '.join(ins.operands)}"
            if p is None:
                add((off, text, 0))
                continue
            t = total_at[off]
            add((off, text, t))
            s[_SAMPLES] += t
            s[_ISSUED] += issued_at[off]
            for r, n in p.stalls:
                reasons[r] += n
    location = ctx.location
    for e in ctx.edges:
        if e.category == "self":
            continue
        d = location(e.def_)
        if d is None:
            continue
        u = location(e.use)
        key = (d.file, d.line)
        s = own.get(key)
        if s is None:
            s = own[key] = _new_slot()
        stall = e.stall
        s[_BLAMED] += stall
        s[_CATS][e.category] += stall
        if u is not None:
            s[_FROM][(path_map(u.file), u.line)] += stall
    out = []
    for (file, line), s in sorted(own.items()):
        if s[_SAMPLES] == 0 and s[_BLAMED] == 0:
            continue
        out.append(frozen_new(   # LineStats(...): a record per line, 10^4 on a large kernel (gpa_lsp/frozen.py)
            LineStats, file=path_map(file), line=line, samples=s[_SAMPLES], issued=s[_ISSUED],
            by_reason=_descending(list(s[_REASONS].items()), _SECOND),
            blamed=round(s[_BLAMED], 6),
            blamed_by_category=_descending([(k, round(v, 6)) for k, v in s[_CATS].items()], _SECOND),
            blamed_from=_descending([(f, l, round(v, 6)) for (f, l), v in s[_FROM].items()], _THIRD),
            instructions=tuple(s[_INS])))
    return tuple(out)


_SECOND, _THIRD = itemgetter(1), itemgetter(2)


def _descending(items: list, key) -> tuple:
    """``items`` by ``key`` descending, equal keys in their order (``reverse=True`` keeps a sort
    stable); most lines have one or none, which need no sort."""
    return tuple(items) if len(items) < 2 else tuple(sorted(items, key=key, reverse=True))
