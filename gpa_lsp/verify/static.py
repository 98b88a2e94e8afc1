"""Static what-if: the target function compiled with and without the fix, compared (no GPU).

Instructions are matched by (source file, line, base opcode): offsets move with any change, while
a fix's effect shows as counts that change on the lines it touches (conversions that vanish from
the statement whose literals became float, reloads that vanish from the loop whose pointers became
``__restrict__``). Lines moved by the edit itself (a pragma inserted above a loop) are mapped
back through the edit's line shift.

What the comparison decides:
* no instruction differs on a sampled line: the compiler already produces this code (``unchanged``);
* for a fix that deletes work (float literals, restrict, fast math): the instructions that vanished
  are taken out of the *recorded* kernel (the last ones of each (line, opcode) group: a reload
  follows the first load, a repeated conversion the first) and the estimate is recomputed with
  the deletion model (analysis/deletion.py): their own samples, the stalls waiting on their
  results, the waits at them, the address arithmetic that dies with them, and the share of the
  LG queue that deleted accesses free (analysis/optimizers/shared.py) (Eq. 2). Restrict without
  aliasing reloads deletes nothing: the runner compares the two builds' round trips of global loads
  instead (``sass.batches.load_rounds``, ``loads_behind_barriers``; docs/verification.md).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Iterable

from ..analysis.deletion import vanishing_edges
from ..analysis.estimate import stall_elimination
from ..analysis.optimizers.shared import lg_share, queue_edges
from ..sass.model import Function, Instruction
from ..sass import opcodes
from .model import StaticDiff

# fixes whose gain is work that disappears; the others (unroll, inline, block size) reorder or
# re-schedule work, which a static count cannot price
DELETING = {"float_literal", "restrict", "fast_math"}
# fixes that change host code only: the kernel's SASS cannot show them
HOST_ONLY = {"block_size"}

_FAMILIES = (
    ("conversion", opcodes.COUNTED_CONVERSIONS),
    ("fp64", opcodes.FP64),
    ("special function", opcodes.MUFU),
    ("local memory", opcodes.LOCAL_MEMORY),
    ("global load", opcodes.GLOBAL_LOAD),
    ("branch", opcodes.CONTROL_TRANSFERS),
    ("integer multiply", opcodes.INTEGER_MULTIPLIES),
)


def family(base: str) -> str:
    for name, ops in _FAMILIES:
        if base in ops:
            return name
    return base


LineKey = tuple[str, int]


def line_key(ins: Instruction, rename: Callable[[str], str] = lambda p: p) -> LineKey | None:
    if ins.loc is None or not ins.loc.line:
        return None
    return (rename(ins.loc.file or ""), ins.loc.line)


def line_shift(edits: Iterable, file: str) -> Callable[[int], int]:
    """New line (1-based) -> old line of ``file`` after ``edits`` (SourceEdit: start/end 0-based, old text)."""
    target = str(Path(file).resolve())
    es = sorted((e.start[0], e.end[0], e.text.count("\n")) for e in edits
                if str(Path(e.file).resolve()) == target)

    def old(new_line: int) -> int:
        cum = 0
        for s, e, nl in es:
            new_start = s + 1 + cum          # the edited region in new coordinates (1-based)
            if new_line < new_start:
                break
            if new_line <= new_start + nl:
                return s + 1 + min(new_line - new_start, e - s)
            cum += nl - (e - s)
        return new_line - cum
    return old


def groups(fn: Function, key: Callable[[Instruction], LineKey | None]) -> dict[tuple[LineKey, str], list[Instruction]]:
    out: dict[tuple[LineKey, str], list[Instruction]] = defaultdict(list)
    for ins in fn.instructions:
        k = key(ins)
        if k is not None:
            out[(k, ins.base_opcode)].append(ins)
    return out


def _local(fn: Function) -> int:
    return sum(1 for i in fn.instructions if i.base_opcode in opcodes.LOCAL_MEMORY)


def compare(before: Function, after: Function, *, sampled_lines: set[LineKey],
            key_before: Callable[[Instruction], LineKey | None],
            key_after: Callable[[Instruction], LineKey | None]) -> tuple[StaticDiff, dict[tuple[LineKey, str], int]]:
    """The diff of two compilations of one function, and the count removed per (line, base opcode)."""
    gb, ga = groups(before, key_before), groups(after, key_after)
    removed: dict[tuple[LineKey, str], int] = {}
    vanished: Counter = Counter()
    appeared: Counter = Counter()
    for k in set(gb) | set(ga):
        nb, na = len(gb.get(k, ())), len(ga.get(k, ()))
        if nb > na:
            removed[k] = nb - na
            vanished[family(k[1])] += nb - na
        elif na > nb:
            appeared[family(k[1])] += na - nb
    changed = [i.opcode for i in before.instructions] != [i.opcode for i in after.instructions]

    def hot(groups, key) -> Counter:
        return Counter((k, i.opcode) for (k, _), ins in groups.items() if k in sampled_lines for i in ins)
    hot_changed = hot(gb, key_before) != hot(ga, key_after)
    diff = StaticDiff(changed=changed, hot_changed=hot_changed,
                      vanished=tuple(sorted(vanished.items(), key=lambda kv: -kv[1])),
                      appeared=tuple(sorted(appeared.items(), key=lambda kv: -kv[1])),
                      registers=(before.registers, after.registers), spills=(_local(before), _local(after)),
                      instructions=(len(before.instructions), len(after.instructions)))
    return diff, removed


def deleted_offsets(sampled: Function, removed: dict[tuple[LineKey, str], int],
                    key: Callable[[Instruction], LineKey | None], rebuilt_counts: dict[tuple[LineKey, str], int]) -> frozenset[int]:
    """Offsets in the recorded function that the fix removes: per (line, opcode) group, the last ones.

    When the recorded build's group size differs from the rebuilt original's (another compiler
    version), the removed count is scaled to it."""
    by_key = groups(sampled, key)
    out: set[int] = set()
    for k, n in removed.items():
        ins = by_key.get(k)
        if not ins:
            continue
        total = rebuilt_counts.get(k) or len(ins)
        take = min(len(ins), round(n * len(ins) / total))
        out.update(i.offset for i in sorted(ins, key=lambda i: i.offset)[len(ins) - take:])
    return frozenset(out)


def deletion_estimate(ctx, deleted: frozenset[int]) -> tuple[float, float]:
    """(speedup, samples removed) when ``deleted`` instructions vanish from the recorded kernel (Eq. 2)."""
    if not deleted or not ctx.total:
        return 1.0, 0.0
    own = [e for e in ctx.edges if e.use in deleted and e.def_ == e.use]
    waited = [e for e in ctx.edges if e.def_ in deleted and e.use not in deleted and e.def_ != e.use]
    claimed = own + waited
    more = vanishing_edges(ctx, deleted, claimed)
    # deleted global/local accesses free their share of the LG queue: the other accesses'
    # lg_throttle shrinks by it (the rule Restrict Pointer and the spill optimizers use)
    queue = queue_edges(ctx, deleted, lg_share(ctx, deleted))
    samples = sum(e.stall for e in claimed) + sum(e.stall for e in more) + sum(e.stall for e in queue)
    samples = min(samples, float(ctx.total) * 0.999)
    return stall_elimination(float(ctx.total), samples), samples


def sampled_lines(ctx, key: Callable[[Instruction], LineKey | None], min_share: float = 0.0) -> set[LineKey]:
    """Lines of the recorded kernel whose instructions carry samples (own or blamed)."""
    weight: dict[int, float] = defaultdict(float)
    for off, n in ctx.total_at.items():
        weight[off] += n
    for e in ctx.edges:
        weight[e.def_] += e.stall
    out: set[LineKey] = set()
    floor = min_share * ctx.total
    for fb in ctx.blames:
        for ins in fb.function.instructions:
            if weight.get(ins.offset, 0.0) > floor:
                k = key(ins)
                if k is not None:
                    out.add(k)
    return out

