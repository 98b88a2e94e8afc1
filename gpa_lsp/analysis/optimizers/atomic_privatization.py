"""Atomic Privatization: global atomics on few distinct counters, replaced by a per-block copy in
shared memory (shared atomics) and one global atomic per counter and block.

Mechanism (benchmarks/atomics, measured on the H100): a global ``atomicAdd`` whose result is unused
compiles to ``REDG``, fire-and-forget for the warp: the read-modify-write happens at the L2, and
adds to one address are done one after another there. With few distinct counters the L2
serializes the grid's atomics: 2^24 adds took 12.3 ms on 1 counter, 4.3 ms on 256, 1.4 ms on 1024
and 0.26 ms on 16384, against 0.02-0.04 ms for the same loop without atomics. On Hopper the SM's
samples do not show this as a stall on the atomic: the REDs fill the LSU queue (``lg_throttle`` on
the RED itself), the next load of the loop waits (``long_scoreboard``) because it queues behind
them, and the kernel's exit waits for them (``drain``). So the match is the loop that issues the
atomic, not the atomic's own samples: the samples of its innermost loop spent waiting on memory
(the memory-dependency and memory-throttle categories: long scoreboard, LG throttle), plus the
exit's ``drain``.

Contention -- how many distinct counters the atomic can hit -- comes from the SASS of its address
(``distinct_addresses``): the index is a loaded byte (``LDG.U8``: 256 values), a loaded 16-bit
value (65536), or masked with a constant (``LOP3.LUT ... 0xffc``: 2^popcount values), or every
operand is uniform (1 counter); a per-thread index (thread or block id, a loop counter) is not
contended and is not matched. It is an upper bound: a test in the source (``position < 26``) is
not read, so letter_histogram's 7 counters count as 256. Only reductions (``RED``: the old value
unused) are matched: an ``ATOM`` whose result is used hands out slots (a BFS frontier's tail),
which a per-block copy does not replace. Why the SASS and not ncu's counters: ncu reports the
sectors per request of the RED (the distinct 32-byte sectors one warp hits), which says how a
warp's lanes spread, not how many counters the whole grid shares; that is what the L2 serializes on.

Estimate: Amdahl over the share ``f`` the measured speedup prices, with the microbenchmark's
``r = global_ms / private_ms`` at that number of counters (``gpa_lsp/data/atomics.json``,
log-interpolated between measured levels): ``1 / ((1 - f) + f / r)``. ``r`` is a whole-kernel
ratio: the microbenchmark's kernels are a prologue, the grid-stride loop and the exit, and its
privatized time includes their issue, the per-block zeroing and merge and the exit. So ``f`` is
what the case's kernel has of that shape: every wait of the atomic's loop (not only its memory
waits: the branch and dispatch waits, the prologue's are in the measured kernels too) and, when
the atomic is in a loop, of the function's code outside every loop (prologue and exit: the exit's
``drain`` waits for the REDs). The issue samples (``selected``) stay, as for every estimate here:
the privatized loop issues the same instructions. On the calibration cases what the memory waits
left out was 0.23% of the samples on radix_digit_count and 0.18% on letter_histogram, which
priced as unchanged time took 6% and 19% off the ratio (26.3x and 105x for the table's 27.9x and
130x; measured 32.6x and 113x); the issue samples are 0.05% and 0.06%. Code in other loops is other work and stays. The range: *low*,
only the loop's memory waits and the exit's drain priced (the estimate before this rule), at the
smaller neighbouring measured level; *high*, the point's share at the larger level.

Once privatized the loop streams what it reads, so the table is measured for 1-, 2- and 4-byte
keys and the row is chosen by the bytes the loop loads per reduction (``bytes_per_atomic``, from
the SASS load widths). Counters beyond 16384 (64 KB of shared memory per block) are not privatized.
Float adds (``RED.E.ADD.F32``, ``.F64``): the table measured unsigned adds of 1. On a contended
counter the L2 takes 2.4x as long per float add (benchmarks/atomics/same_counter.cu, H200: 1.76 ns
against 0.73 ns per atomic on one counter, the same for a second counter in the same sector; 2.4x
at 8 counters, 1.0-1.05x from 32 on), and in shared memory a float add is a compare-and-swap loop
(2.0-7.4x an unsigned add's privatized loop from 8 counters on, 45x on one). So the ratio is scaled by
the global factor over the private one at the match's counters (``op_factor``); on one counter the
change is a reduction in registers and warp shuffles, whose floor is the loop's stream as the
unsigned table's privatized time already is, so only the global factor applies. Calibration (blind):
class_moments_atomic (three adds per element, two of them float, 256 counters by the SASS): 135x ->
58x, its shared-memory copy measured 46.9x (per-thread registers for its 8 classes 119x).

The fix is a rewrite, not a mechanical edit: the advice says what to write.
"""

from __future__ import annotations

import math
import re

from ..context import kernel_fact
from ..probe_tables import atomics_devices, atomics_name
from .base import Match, Optimizer, reason_share, edge_sums
from .shared import lg_share, queue_edges

# reductions: atomics whose old value is unused (nvcc emits RED then). An ATOM whose result is used
# hands out slots (a queue's tail, a ticket): a per-block copy does not replace it (that change is a
# block-wide scan and one atomic per block, another optimization)
GLOBAL_REDUCTIONS = frozenset({"REDG", "RED"})
# the GPA categories (profile/reasons.py) of the loop's waits on the memory system the atomics occupy:
# long_scoreboard (memory_dependency), lg_throttle and drain (memory_throttle)
MEMORY_WAITS = frozenset({"memory_dependency", "memory_throttle"})
MAX_PRIVATE_BINS = 16384            # 64 KB of 4-byte counters per block: the largest level measured
_UNIFORM = re.compile(r"^(UR\d+|URZ|RZ|PT|UPT|UP\d+)$")
_REG = re.compile(r"\[(R\d+)(?:\.64)?")
_IMMEDIATE = re.compile(r"^-?0x[0-9a-fA-F]+$|^-?\d+$")
_DEPTH = 8


def _measured(device_name: str, pattern: str) -> list[dict]:
    """The atomics table's rows of ``pattern`` under ``device_name`` (a kernel's: ``probe_tables.atomics_name``:
    its device's own, its chip's, else the table's first device's)."""
    return atomics_devices()[device_name]["patterns"][pattern]


def levels(device_name: str, pattern: str = "random", key_bytes: int = 4) -> list[dict]:
    """Measured levels with a privatized time, by bins, for keys of ``key_bytes`` (``_measured``'s device)."""
    return [r for r in _measured(device_name, pattern) if "ratio" in r and r["key_bytes"] == key_bytes]


def measured_widths(device_name: str, pattern: str = "random") -> list[int]:
    return sorted({r["key_bytes"] for r in _measured(device_name, pattern) if "ratio" in r})


def ratio(device_name: str, bins: int, key_bytes: int = 4,
          pattern: str = "random") -> tuple[float, float, float] | None:
    """(r, low, high): the privatized loop's speedup at ``bins`` counters with keys of ``key_bytes``,
    log-interpolated between the measured levels, and the smaller and larger of the two levels
    around it. Keys of a width not measured, or counters beyond its levels, take the next wider
    measured key; None beyond the largest privatizable level."""
    widths = measured_widths(device_name, pattern)
    fits = [w for w in widths if w >= key_bytes] or widths[-1:]
    for width in fits:
        rows = levels(device_name, pattern, width)
        if rows and 1 <= bins <= rows[-1]["bins"]:
            break
    else:
        return None
    for lo, hi in zip(rows, rows[1:]):
        if lo["bins"] <= bins <= hi["bins"]:
            r = _log_between(lo, hi, bins, "ratio")
            return r, min(lo["ratio"], hi["ratio"], r), max(lo["ratio"], hi["ratio"], r)
    r = rows[0]["ratio"]
    return r, r, r


def _log_between(lo: dict, hi: dict, bins: int, key: str) -> float:
    """``key`` at ``bins`` counters between two measured levels, interpolated in log-log (the
    levels' own values at their counters)."""
    if bins == lo["bins"] or hi["bins"] == lo["bins"]:
        return lo[key]
    if bins == hi["bins"]:
        return hi[key]
    t = (math.log(bins) - math.log(lo["bins"])) / (math.log(hi["bins"]) - math.log(lo["bins"]))
    return math.exp((1 - t) * math.log(lo[key]) + t * math.log(hi[key]))


# the operand types of a float reduction (``RED.E.ADD.F32.FTZ.RN``) that the L2 adds at 2.4x an
# unsigned add's cost per contended atomic (benchmarks/atomics/same_counter.cu measured F32 and F64;
# half and bfloat16 adds are not measured and keep the unsigned table)
FLOAT_TYPES = frozenset({"F32", "F64"})


def float_reduction(ins) -> bool:
    """Whether a global reduction adds floating-point values (its opcode's type modifier)."""
    return any(m in FLOAT_TYPES for m in ins.opcode.split(".")[1:])


def op_costs(device_name: str) -> dict | None:
    """same_counter.cu's float-against-unsigned costs (``atomics.json``'s ``op_costs``) for the device
    whose levels apply (``atomics_name``), else those of the device that has them: the H100 and the
    H200 are one chip, whose unsigned levels agree within 1% (12.3 ms for 2^24 adds on one counter)."""
    devices = atomics_devices()
    own = devices.get(device_name, {}).get("op_costs")
    return own or next((d["op_costs"] for d in devices.values() if d.get("op_costs")), None)


def op_factor(device_name: str, bins: int, private: bool) -> float:
    """How many times an unsigned add's time the same loop takes with float adds at ``bins`` counters:
    its global atomics (``private`` False) or its shared-memory copy's (a float add there is a
    compare-and-swap loop), log-interpolated between the measured levels; 1 without a measurement."""
    costs = op_costs(device_name)
    rows = costs.get("f32") if costs else None
    if not rows:
        return 1.0
    key = "private_factor" if private else "global_factor"
    bins = min(max(bins, rows[0]["bins"]), rows[-1]["bins"])
    for lo, hi in zip(rows, rows[1:]):
        if lo["bins"] <= bins <= hi["bins"]:
            return _log_between(lo, hi, bins, key)
    return rows[0][key]


def bytes_per_atomic(function, loop_indices, reductions: int) -> int:
    """The bytes of global loads per global reduction in the atomic's loop (its floor once the atomics
    are privatized: the loop streams what it reads); 4 when the loop loads nothing or is unknown."""
    if not reductions:
        return 4
    bits = 0
    for k in loop_indices:
        ins = function.instructions[k]
        m = ins.memory
        if m is not None and m.load and not m.atomic and m.space in ("global", "generic"):
            bits += m.width
    return max(1, bits // 8 // reductions) if bits else 4


def _defining(function, index: int, reg: str):
    """The nearest instruction before ``index`` that writes ``reg`` (straight-line, backwards)."""
    for k in range(index - 1, -1, -1):
        ins = function.instructions[k]
        if reg in ins.dsts:
            return k, ins
    return None, None


def _bits(imm: str) -> int | None:
    try:
        return bin(int(imm, 0) & 0xFFFFFFFF).count("1")
    except ValueError:
        return None


def _leaves(function, index: int, reg: str, seen: frozenset, depth: int) -> dict[int, int] | None:
    """What ``reg`` at instruction ``index`` is computed from: {index of a bounding def: how many
    values it takes} (a loaded byte: 256, a constant mask: 2^bits); {} when it is uniform (the same
    for every thread); None when it depends on the thread or on a 32-bit loaded value. Keyed by the
    bounding def so that two operands computed from the same value (a 64-bit pair, a sign and a
    quotient) count it once."""
    if _UNIFORM.match(reg):
        return {}
    if depth > _DEPTH:
        return None
    k, ins = _defining(function, index, reg)
    if ins is None or k in seen:
        return None            # a loop-carried value (an induction) or a parameter in a register
    op, mods = ins.base_opcode, ins.opcode.split(".")[1:]
    if ins.memory is not None and ins.memory.load:
        if ins.memory.space == "constant":
            return {}
        if "U8" in mods or "S8" in mods:
            return {k: 256}
        if "U16" in mods or "S16" in mods:
            return {k: 65536}
        return None            # a 32-bit loaded key: as many values as keys
    if op in ("S2R", "CS2R"):
        return None            # thread/block ids, clocks: per thread
    if op == "S2UR":
        return {}
    if op == "LOP3" and len(ins.operands) >= 5 and ins.operands[4] == "0xc0":
        # d = a & b: bounded by the constant mask's set bits
        for operand in ins.operands[2:4]:
            if _IMMEDIATE.match(operand):
                bits = _bits(operand)
                if bits is not None:
                    return {k: 2 ** bits}
    out: dict[int, int] = {}
    seen = seen | {k}
    for src in sorted(ins.srcs):
        if src.startswith(("P", "UP")) or src in ("PT", "UPT"):
            continue
        got = _leaves(function, k, src, seen, depth + 1)
        if got is None:
            return None
        out.update(got)
    return out


def distinct_addresses(function, index: int) -> int | None:
    """How many distinct addresses the memory instruction at ``index`` can touch across the grid,
    from its address computation; None when it depends on the thread (no contention) or is unknown."""
    ins = function.instructions[index]
    for operand in ins.operands:
        m = _REG.search(operand)
        if m:
            reg = m.group(1)
            regs = [reg] + ([f"R{int(reg[1:]) + 1}"] if ".64" in operand else [])
            leaves: dict[int, int] = {}
            for r in regs:
                got = _leaves(function, index, r, frozenset(), 0)
                if got is None:
                    return None
                leaves.update(got)
            return math.prod(leaves.values())
    return None


@kernel_fact
def contended_atomics(ctx) -> list[tuple[int, int]]:
    """(offset, distinct addresses) of every global atomic whose address takes at most
    ``MAX_PRIVATE_BINS`` values, hottest loop first."""
    out = []
    for fb in ctx.blames:
        fn = fb.function
        for k, ins in enumerate(fn.instructions):
            if ins.base_opcode not in GLOBAL_REDUCTIONS or ins.memory is None:
                continue
            if ins.memory.space not in ("global", "generic"):
                continue
            bins = distinct_addresses(fn, k)
            if bins is not None and bins <= MAX_PRIVATE_BINS:
                out.append((ins.offset, bins))
    return out


class AtomicPrivatization(Optimizer):
    id = "atomic_privatization"
    title = "Atomic Privatization"
    suggestion = ("Global atomics on few counters serialize at the L2. Keep a per-block copy of the "
                  "counters in shared memory (zero it, atomicAdd there, __syncthreads), then add each "
                  "non-zero counter to global memory once per block.")
    # the change removes the L2's atomic traffic and the LSU queue's REDs; the loads stay
    keeps = ("dram",)
    mlp_factor = None

    def match(self, ctx) -> Match | None:
        atomics = contended_atomics(ctx)
        if not atomics:
            return None
        members: set[int] = set()
        straight: set[int] = set()
        looped = set()          # functions whose code outside every loop is in ``straight`` already
        for off, _ in atomics:
            lp = ctx.loop_of(off)
            fn = ctx.site(off).function
            members |= {fn.instructions[i].offset for i in lp.instructions} if lp is not None else {off}
            if lp is not None and fn.name not in looped:
                # the microbenchmark's shape: a loop of atomics, its prologue and exit (an atomic
                # outside any loop, one per thread or per block, is not that kernel)
                looped.add(fn.name)
                straight |= {ins.offset for ins in fn.instructions if ctx.loop_of(ins.offset) is None}
        edges, waits = [], 0.0
        # every wait, not the issue: the privatized loop issues the same instructions (and ATOMS)
        for e in ctx.edges_where(not_reasons=("active",)):
            if e.use in members:
                edges.append(e)
                waits += e.stall if e.reason in MEMORY_WAITS else 0.0
            elif e.use in straight:
                # the prologue and exit: the microbenchmark's kernels have them (see the docstring)
                edges.append(e)
                if e.reason == "memory_throttle":
                    # the exit's wait for the REDs still in flight: the low end's share too
                    waits += e.stall * reason_share(ctx.pcs.get(e.use), "drain",
                                                    ("lg_throttle", "drain", "tex_throttle"))
        if not waits:
            return None
        # the most contended atomic prices the change (fewest counters: the largest measured gain
        # of the loops matched is the one the samples are dominated by in practice)
        off, bins = min(atomics, key=lambda a: a[1])
        site = ctx.site(off)
        lp = ctx.loop_of(off)
        body = sorted(lp.instructions) if lp is not None else [site.index]
        reds = sum(1 for k in body if site.function.instructions[k].base_opcode in GLOBAL_REDUCTIONS)
        width = bytes_per_atomic(site.function, body, reds)
        return Match(tuple(edges), *edge_sums(edges),
                     data={"atomic": off, "bins": bins, "key_bytes": width, "waits": waits,
                           # a float add among the most contended: the privatized loop does it in
                           # shared memory too, where it is a compare-and-swap loop
                           "float": any(float_reduction(ctx.site(o).instruction) for o, b in atomics if b == bins)})

    def _amdahl(self, ctx, match: Match, r: float, samples: float | None = None) -> float:
        f = (match.samples if samples is None else samples) / ctx.total if ctx.total else 0.0
        f = min(max(f, 0.0), 1.0)
        return 1.0 / ((1.0 - f) + f / r)

    @staticmethod
    def _ratio(ctx, match: Match) -> tuple[float, float, float] | None:
        """The table's (r, low, high) for the match's counters and key width, scaled for float adds:
        their global loop costs ``op_factor`` more; the privatized loop's shared copy too, except on
        one counter, whose change is a reduction in registers (the loop's floor, as the unsigned
        table's privatized time at one counter already is: 0.036 ms against a 0.038 ms stream)."""
        name = atomics_name(ctx.device)
        bins = match.data["bins"]
        got = ratio(name, bins, match.data["key_bytes"])
        if got is None or not match.data.get("float"):
            return got
        scale = op_factor(name, bins, False) / (1.0 if bins == 1 else op_factor(name, bins, True))
        return tuple(r * scale for r in got)

    def estimate(self, ctx, match: Match) -> float:
        got = self._ratio(ctx, match)
        return 1.0 if got is None else self._amdahl(ctx, match, got[0])

    def estimate_range(self, ctx, match: Match, point: float) -> tuple[float, float] | None:
        got = self._ratio(ctx, match)
        if got is None:
            return None
        _, low, high = got
        return (min(self._amdahl(ctx, match, low, match.data["waits"]), point),
                max(self._amdahl(ctx, match, high), point))

    def explained_throttle(self, ctx) -> dict[int, float]:
        """The LSU-queue throttle on the global atomics themselves (privatized, they leave the queue)
        and theirs of the LG queue's throttle on the loads (``shared.queue_edges``), and the exit's ``drain`` in the share of the kernel's global writes that are these atomics
        (the exit waits for the REDs still in flight)."""
        atomics = contended_atomics(ctx)
        if not atomics:
            return {}
        out: dict[int, float] = {}
        for off, _ in atomics:
            pc = ctx.pcs.get(off)
            if pc is not None:
                n = pc.stall_dict().get("lg_throttle", 0)
                if n:
                    out[off] = float(n)
        # the LG queue's throttle on the other LG instructions, in the atomics' share of its entries
        members = frozenset(off for off, _ in atomics)
        for e in queue_edges(ctx, members, lg_share(ctx, members)):
            out[e.use] = out.get(e.use, 0.0) + e.stall
        writes = [site.instruction.offset for fb in ctx.blames
                  for site in map(ctx.site, (i.offset for i in fb.function.instructions))
                  if site is not None and site.instruction.memory is not None
                  and site.instruction.memory.global_write]
        share = len(atomics) / len(writes) if writes else 0.0
        for off, pc in ctx.pcs.items():
            n = pc.stall_dict().get("drain", 0)
            if n and share > 0:
                out[off] = out.get(off, 0.0) + n * share
        return out

    def source_place(self, ctx, match: Match) -> tuple[str, int] | None:
        """The contended atomic's own line: the change replaces it, while the stalls it causes sit on
        the loop's next load, which waits behind the REDs (class_moments_atomic's ``x[i]``)."""
        loc = ctx.location(match.data["atomic"])      # the user's call site of a toolkit atomicAdd
        return (loc.file, loc.line) if loc is not None and loc.file and loc.line else None

    def describe(self, ctx, match: Match) -> str:
        bins, width = match.data["bins"], match.data["key_bytes"]
        site = ctx.site(match.data["atomic"])
        op = site.instruction.opcode if site is not None else "the atomic"
        counters = "one counter" if bins == 1 else f"at most {bins} distinct counters"
        r = self._ratio(ctx, match)[0]
        floats = match.data.get("float")
        adds = (f" Float adds cost the L2 {op_factor(atomics_name(ctx.device), 1, False):.1f}x an integer add "
                "each on a contended counter." if floats and bins <= 8 else "")
        if bins == 1:
            return (f"{op} adds to one counter in global memory (its address, in the SASS), so the L2 performs "
                    f"the grid's atomics one after another; the loop waits behind them.{adds} Sum in a register "
                    f"over the loop, reduce the warp with __shfl_down_sync (and the block through shared memory), "
                    f"then one atomicAdd per warp or block. From the loops measured on the H100 and H200 "
                    f"(benchmarks/atomics) with {width}-byte loads per atomic: the loop without its atomics is "
                    f"{r:.0f}x faster.")
        cas = (" A float atomicAdd in shared memory is a compare-and-swap loop on sm_90 (no native "
               "one), which the estimate prices (benchmarks/atomics, same_counter.cu); where the counters "
               "are few and known at compile time, per-thread partials in registers and a warp shuffle "
               "reduction avoid it." if floats else "")
        return (f"{op} adds to {counters} in global memory (its address, in the SASS), so the L2 "
                f"performs the grid's atomics one after another per counter; the loop waits behind "
                f"them.{adds} Keep a per-block copy of the counters in shared memory (zero it, atomicAdd "
                f"there, __syncthreads), then add each non-zero counter to global memory once per "
                f"block. From the loops measured on the H100 (benchmarks/atomics) at {bins} counters and "
                f"{width}-byte keys{', with float adds' if floats else ''}: the privatized loop is {r:.0f}x "
                f"faster.{cas}")
