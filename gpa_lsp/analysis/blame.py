"""The instruction blamer (GPA section 4): who caused each sampled stall.

One forward data-flow pass per function computes, at every instruction and
for every resource it uses (registers, uniform registers, predicates and the
six scoreboards as ``B0``..``B5``), the defs that can reach it, with the
shortest instruction and cycle distance along a path on which the def is not
overwritten. That is GPA's backward slice computed all at once instead of one
walk per sample, which keeps a 20,000-instruction kernel well under a second.

Why forward rather than one backward walk per use: samples land on most
instructions of a hot kernel, and a per-use walk revisits the same blocks for
every register defined far away (parameters, loop invariants).

Semantics kept from GPA:
* predicates: a def guarded by ``@P`` does not hide older defs until a def
  guarded by ``@!P`` (or an unguarded one) covers it; a def with the same
  guard as the use covers the use;
* scoreboards are counters: every setter reaches the next waiter; a wait
  drains the scoreboard. That holds for read barriers too (a write-after-read
  def ``B3`` set by a load that still reads its operands): such a def has no
  latency horizon, it stays in the state until a wait on its barrier drains
  it, so a def whose barrier is waited on along every path is gone at the join;
* first reader: an unguarded reader absorbs the stall of every def it reads
  (it waited for them; after it the value is there), so those defs leave the
  state at that reader. At a join a def reaches only from the paths on which
  no unguarded reader came between (see ``_transfer``);
* the distance used in Eq. 1 is the *shortest* surviving path. GPA takes the
  longest, which is unbounded inside loops; the shortest is also the path on
  which a latency shows.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Mapping, NamedTuple

from gpa_lsp.profile.model import PCStats
from gpa_lsp.profile.reasons import category as reason_category
from gpa_lsp.sass.model import Function, Instruction
from gpa_lsp.sass.opcodes import STALL_BARRIERS

from ..sass import defuse
from .flow import Flow, build_flow

# the def classes of a long-scoreboard wait (L1TEX operations) and of a short-scoreboard one (MIO);
# constant loads (LDC) are MIO operations: benchmarks/blame/ldc measured a wait on an LDC as a
# short-scoreboard stall (99.6% of a constant-memory chase's samples, both collectors, H200) and a
# wait on an LDG as a long-scoreboard one, so a long-scoreboard wait on a scoreboard an LDC and a
# global load share (nvcc does that) is the global load's
MEMORY_CLASSES = frozenset({"global_memory", "local_memory", "texture_memory", "write_after_read"})
EXECUTION_CLASSES = frozenset({"shared_memory", "arithmetic", "write_after_read", "scheduling", "constant_memory"})
FIXED_CAP = 16      # cycles: bound for defs without a scoreboard that the table calls variable
ISSUE_FLOOR = 1.0   # issued samples assumed for a def that was never seen issuing (Eq. 1)
_MAX_ROUNDS = 64


class BlameEdge(NamedTuple):
    """Samples seen at ``use`` blamed on ``def_`` (both offsets). ``def_ == use`` with category "self".

    A NamedTuple rather than a dataclass: a hot kernel yields one per def-use pair and reason,
    tens of thousands of them, and tuple construction is several times cheaper.
    """

    def_: int
    use: int
    reason: str          # GPA category of the stall reason at the use
    category: str        # class of the def: global_memory, local_memory, ..., self
    stall: float         # all samples blamed
    latency: float       # not-issued (latency) samples blamed
    distance: int = 0    # instructions on the shortest surviving path (0 for self)


# field getters by position, for bulk sums and keys over 10^4-10^5 edges without a Python frame per
# edge (``map(EDGE_STALL, edges)``); derived from the fields, so they follow the tuple's layout
EDGE_DEF, EDGE_STALL, EDGE_LATENCY = (itemgetter(BlameEdge._fields.index(f)) for f in ("def_", "stall", "latency"))


class Dependence(NamedTuple):
    """A def that reaches a use (before stall-reason pruning)."""

    def_: int            # instruction index
    distance: int        # instructions
    cycles: int          # control-code stall cycles along the path
    resources: tuple[str, ...]
    via_read_barrier: bool = False


@dataclass
class FunctionBlame:
    function: Function
    flow: Flow
    samples: dict[int, PCStats]                   # offset -> stats
    edges: list[BlameEdge] = field(default_factory=list)
    # offset -> all samples / latency (not-issued) samples, summed once here for the context;
    # same keys in the same order as ``samples`` (None: not summed, the context sums them)
    totals: dict[int, int] | None = None
    latencies: dict[int, int] | None = None
    sm: int = 90

    @cached_property
    def dependences(self) -> dict[int, tuple[Dependence, ...]]:
        """Sampled use index -> its hot deps (``reaching_defs`` pruned by ``hot_dependences``): what
        the edges were apportioned over. Made on first ask: the analysis itself reads only the edges
        (``blame_function`` prunes the raw reaching defs inline and builds no Dependence)."""
        index_of = {x.offset: k for k, x in enumerate(self.function.instructions)}
        wanted = [index_of[o] for o in self.samples]
        reach = reaching_defs(self.function, self.flow, wanted=set(wanted), prep=_prepare(self.function, self.sm))
        return {j: hot_dependences(self.function, j, reach.get(j, ()), self.sm) for j in wanted}

    @property
    def total(self) -> int:
        return sum(p.total for p in self.samples.values())


# ---------------------------------------------------------------------------------------------
# reaching definitions with distances

# An entry: (def index, guard, distance base, cycle base, via read barrier)
_Entry = tuple


def _complement(g):
    return (g[0], not g[1]) if g else None


def _add_def(entries: tuple, new: _Entry) -> tuple:
    g = new[1]
    if g is None:
        return (new,)
    comp = _complement(g)
    kept = [new]
    for e in entries:
        if e[1] == g:
            continue
        kept.append(e)
        if e[1] == comp or e[1] is None:
            break
    return tuple(kept)


def _merge(a: tuple, b: tuple) -> tuple:
    """The entries of ``a`` then those of ``b`` not in ``a``, one per def: distances and cycles the
    minimum, read only if read on both paths; guard and read-barrier flag of the first seen."""
    if a == b:
        return a
    if len(a) == 1 and len(b) == 1:     # the common case, without the bookkeeping below
        x, y = a[0], b[0]
        if x[0] != y[0]:
            return (x, y)
        return ((x[0], x[1], min(x[2], y[2]), min(x[3], y[3]), x[4]),)
    # Joins after loops that may be skipped meet long lists (a register's defs from the last few
    # loops, within their horizon) that share few defs: keep ``a``'s entries as they are and
    # rebuild only the shared ones. A list holding one def twice (a scoreboard set again before
    # its wait) takes the general path, which also merges those.
    pos = {e[0]: k for k, e in enumerate(a)}
    if len(pos) != len(a):
        return _merge_general(a, b)
    out = list(a)
    for e in b:
        k = pos.get(e[0])
        if k is None:
            pos[e[0]] = len(out)
            out.append(e)
        else:
            o = out[k]
            if o != e:
                out[k] = (o[0], o[1], min(o[2], e[2]), min(o[3], e[3]), o[4])
    return tuple(out)


def _merge_general(a: tuple, b: tuple) -> tuple:
    pos: dict[int, int] = {}
    out: list[list] = []
    for e in a + b:
        k = e[0]
        if k in pos:
            o = out[pos[k]]
            o[2] = min(o[2], e[2])
            o[3] = min(o[3], e[3])
        else:
            pos[k] = len(out)
            out.append(list(e))
    return tuple(tuple(x) for x in out)


@dataclass(frozen=True)
class _Prepared:
    uses: tuple[tuple[str, ...], ...]          # registers + guard per instruction
    waits: tuple[tuple[str, ...], ...]
    defs: tuple[tuple[str, ...], ...]
    bar_defs: tuple[tuple[tuple[str, bool], ...], ...]
    guards: tuple
    stall: tuple[int, ...]                     # control-code stall cycles (>= 1)
    # per def: the distance and the cycles from which it can no longer stall a use (``def_limits``);
    # None: keep every reaching def (callers that want them all, e.g. deletion.py)
    horizon: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    limits: tuple[tuple[str | None, int, int], ...] | None = None   # ``def_limits`` per instruction (with sm)


def def_limits(ins: Instruction, sm: int) -> tuple[str | None, int, int]:
    """(write-barrier name or None, lower latency bound for pruning, upper bound) of a def.

    A def with a scoreboard stalls a use only while fewer than ``upper`` cycles separate them; one
    without stalls it only while fewer than ``lower`` instructions do (``blame_function``'s pruning).
    """
    c = ins.control
    wb = c.write_barrier if c is not None else None
    lo, hi, fixed = defuse.latency(ins, sm)
    bname = defuse.barrier_name(wb) if wb is not None and wb < 6 else None
    if bname is None and c is not None and not fixed:
        lo = min(lo, FIXED_CAP)   # no scoreboard: fixed latency in hardware
    return bname, lo, hi


def _limits_key(ins: Instruction) -> tuple:
    """What ``def_limits`` reads of an instruction (opcode, memory space, write barrier; see
    ``defuse.latency``): instructions with the same key have the same limits."""
    c = ins.control
    return (ins.opcode, ins.memory.space if ins.memory is not None else None, c is None,
            c.write_barrier if c is not None else None)


def _registers(regs, table: dict) -> tuple[str, ...]:
    """``regs`` without the zero registers, sorted; shared through ``table`` (kernels repeat a few
    hundred register sets over 10^4 instructions)."""
    try:
        got = table.get(regs)
    except TypeError:       # not hashable (a set built by hand)
        got = None
    if got is None:
        zero = defuse.ZERO_REGISTERS
        got = tuple(sorted(r for r in regs if r not in zero))
        with contextlib.suppress(TypeError):
            table[regs] = got
    return got


def _prepare(function: Function, sm: int | None = None) -> _Prepared:
    """Per-instruction resources, read once. The scoreboard tuples depend only on the control
    code's fields, so they are shared through small tables (a kernel has 10^4 instructions and a
    few dozen distinct control codes); so are the register tuples and the latency limits. With
    ``sm``, also each def's horizon (see ``_transfer``) and its ``def_limits``."""
    uses, waits, defs, bdefs, guards, stall = [], [], [], [], [], []
    wait_table: dict[int, tuple[str, ...]] = {}                          # wait mask -> B names
    bar_table: dict[tuple, tuple[tuple[str, bool], ...]] = {}            # (write, read barrier) -> defs
    reg_table: dict = {}                                                 # register set -> sorted tuple
    with_limits = sm is not None
    inf = float("inf")
    dist, cyc, lims = [], [], []
    lim_table: dict[tuple, tuple] = {}
    for ins in function.instructions:
        # _registers, its table hit inline (two per instruction, 10^5 on a large kernel)
        r = ins.srcs
        try:
            uses.append(reg_table[r])
        except (KeyError, TypeError):
            uses.append(_registers(r, reg_table))
        r = ins.dsts
        try:
            defs.append(reg_table[r])
        except (KeyError, TypeError):
            defs.append(_registers(r, reg_table))
        guards.append((ins.predicate, ins.predicate_negated) if ins.predicate else None)
        c = ins.control
        if with_limits:
            m = ins.memory
            key = (ins.opcode, m.space if m is not None else None, c is None,   # _limits_key
                   c.write_barrier if c is not None else None)
            got = lim_table.get(key)
            if got is None:
                got = lim_table[key] = def_limits(ins, sm)
            lims.append(got)
            if got[0] is not None:
                dist.append(inf)
                cyc.append(got[2])
            else:
                dist.append(got[1])
                cyc.append(inf)
        if c is None:
            waits.append(())
            bdefs.append(())
            stall.append(1)
            continue
        w = wait_table.get(c.wait_mask)
        if w is None:
            w = wait_table[c.wait_mask] = defuse.barrier_uses(ins)
        waits.append(w)
        key = (c.write_barrier, c.read_barrier)
        bd = bar_table.get(key)
        if bd is None:
            bd = bar_table[key] = defuse.barrier_defs(ins)
        bdefs.append(bd)
        stall.append(max(1, c.stall))
    horizon = limits = None
    if with_limits:
        horizon = (tuple(dist), tuple(cyc))
        limits = tuple(lims)
    return _Prepared(tuple(uses), tuple(waits), tuple(defs), tuple(bdefs), tuple(guards), tuple(stall), horizon,
                     limits)


def _transfer(flow: Flow, prep: _Prepared, b: int, state: dict, record: dict | None, wanted) -> dict:
    """Run block ``b`` over ``state`` (entries relative to block entry); return the exit state."""
    blk = flow.blocks[b]
    cur = dict(state)
    cyc = 0
    guards, uses, waits, defs, bar_defs, stall = prep.guards, prep.uses, prep.waits, prep.defs, prep.bar_defs, prep.stall
    get = cur.get
    horizon = prep.horizon
    dist_lim, cyc_lim = horizon if horizon is not None else ((), ())
    for p, i in enumerate(range(blk.first, blk.last)):
        g = guards[i]
        u = uses[i]
        w = waits[i]
        if record is not None and i in wanted:
            # _note, inlined (10^5 calls on a large kernel)
            deps: dict[int, list] = {}
            for r in u:
                for e in get(r, ()):
                    k = e[0]
                    d, c = e[2] + p, e[3] + cyc
                    if horizon is not None and not e[4] and (d >= dist_lim[k] or c >= cyc_lim[k]):
                        continue  # past its horizon: as if pruned at the last block's exit (below)
                    got = deps.get(k)
                    if got is None:
                        deps[k] = [d, c, [r], e[4]]
                    else:
                        if d < got[0]:
                            got[0] = d
                        if c < got[1]:
                            got[1] = c
                        got[2].append(r)
                        got[3] = got[3] and e[4]
                    if e[1] is None or (g is not None and e[1] == g):
                        break
            for r in w:
                for e in get(r, ()):
                    k = e[0]
                    c = e[3] + cyc
                    if horizon is not None and not e[4] and c >= cyc_lim[k]:
                        continue
                    _note(deps, e, p, cyc, r)
            record[i] = deps
        # an unguarded reader absorbs every def it reads (see reaching_defs); waits drain the scoreboard
        if g is None:
            for r in u:
                if r in cur:
                    del cur[r]
        for r in w:
            if r in cur:
                del cur[r]
        for r in defs[i]:
            if g is None:
                cur[r] = ((i, None, -p, -cyc, False),)
            else:
                cur[r] = _add_def(get(r, ()), (i, g, -p, -cyc, False))
        for r, is_read in bar_defs[i]:
            cur[r] = get(r, ()) + ((i, None, -p, -cyc, is_read),)
        cyc += stall[i]
    n = blk.last - blk.first
    if prep.horizon is None:
        return {r: tuple((e[0], e[1], e[2] + n, e[3] + cyc, e[4]) for e in es) for r, es in cur.items()}
    # Prune defs past their horizon: distances and cycles only grow along a path, so a def that is
    # already too far to stall any use here stays too far at every later use, and blame_function
    # would drop it there. Dropping it now keeps each state to the defs that can still stall:
    # without it, N loops in sequence that may each run zero times leave N defs of a register
    # alive after the last one (quadratic time and memory). Read-barrier entries have no horizon
    # (a write-after-read stall does not fade); a wait drains them.
    dist_lim, cyc_lim = prep.horizon
    out = {}
    for r, es in cur.items():
        if len(es) == 1:                # most registers: one def (no generator for them)
            e = es[0]
            d, c = e[2] + n, e[3] + cyc
            if e[4] or (d < dist_lim[e[0]] and c < cyc_lim[e[0]]):
                out[r] = ((e[0], e[1], d, c, e[4]),)
            continue
        kept = [(k, g, d + n, c + cyc, via) for k, g, d, c, via in es
                if via or (d + n < dist_lim[k] and c + cyc < cyc_lim[k])]
        if kept:
            out[r] = tuple(kept)
    return out


def _note(deps: dict, e: _Entry, p: int, cyc: int, r: str) -> None:
    d, c = e[2] + p, e[3] + cyc
    got = deps.get(e[0])
    if got is None:
        deps[e[0]] = [d, c, [r], e[4]]
    else:
        got[0] = min(got[0], d)
        got[1] = min(got[1], c)
        got[2].append(r)
        got[3] = got[3] and e[4]


def reaching_defs(function: Function, flow: Flow | None = None, wanted=None,
                  prep: _Prepared | None = None) -> dict[int, tuple[Dependence, ...]]:
    """Instruction index -> defs reaching it (all resources it uses), for the indices in ``wanted``.

    A def read by an unguarded instruction is dropped from the state there (first reader, see
    the module docstring). It used to stay, marked as read, so that a join could AND the marks;
    that kept every loop's loads alive on the paths that skip the later loops (a dozen entries
    per register in a kernel of many short loops, each rebuilt at every block) and it let a far,
    read, unguarded def listed first at a join cut a nearer def of another path off at the next
    guarded def. Dropped, the state holds only defs that can still stall. Reports of all recorded
    bundles are unchanged by it; on random programs blame differs in ~0.1% (those cut-offs).
    """
    flow = flow or build_flow(function)
    prep = prep or _prepare(function)
    if wanted is None:
        wanted = set(range(len(function.instructions)))
    out: dict[int, tuple[Dependence, ...]] = {}
    new = tuple.__new__     # Dependence(...) without its Python-level __new__ (10^5 of them)
    for i, deps in _fixpoint(flow, prep, wanted).items():
        got = []
        for k, v in sorted(deps.items()):
            res = v[2]
            res = (res[0],) if len(res) == 1 else tuple(sorted(set(res)))
            got.append(new(Dependence, (k, max(1, v[0]), max(0, v[1]), res, bool(v[3]))))
        out[i] = tuple(got)
    return out


def _fixpoint(flow: Flow, prep: _Prepared, wanted) -> dict[int, dict[int, list]]:
    """The forward pass of ``reaching_defs``: instruction index (in ``wanted``) -> def index ->
    [distance, cycles, resources (unsorted, repeats), via read barrier], before clamping."""
    nb = len(flow.blocks)
    entry: list[dict | None] = [None] * nb
    if nb:
        entry[0] = {}
    exits: list[dict | None] = [None] * nb
    # A block is transferred again only when its entry state changed, so its last
    # transfer ran on the converged entry state: recording during the fixpoint is exact.
    record: dict[int, dict] = {}
    # A join of the same exit states is the same entry state: a block none of whose predecessors'
    # exits changed since its last join is skipped (its join and the comparison with its entry
    # would find no change). version[p]: how often exits[p] changed (0: not yet computed).
    version = [0] * nb
    joined: list[tuple | None] = [None] * nb       # the predecessors' versions at b's last join
    blocks = flow.blocks
    for _ in range(_MAX_ROUNDS):
        changed = False
        for b in flow.rpo:
            pb = blocks[b].preds
            key = tuple([version[p] for p in pb])
            if key == joined[b] and exits[b] is not None:
                continue
            joined[b] = key
            preds = [exits[p] for p in pb if exits[p] is not None]
            merged = _join(([{}] if b == 0 else []) + preds) if (preds or b == 0) else {}
            if merged != entry[b] or exits[b] is None:
                entry[b] = merged
                out = _transfer(flow, prep, b, merged, record, wanted)
                if out != exits[b]:
                    exits[b] = out
                    version[b] += 1
                    changed = True
        if not changed:
            break
    return record


def _join(states: list[dict]) -> dict:
    if not states:
        return {}
    if len(states) == 1:
        return states[0]
    out = dict(states[0])
    for s in states[1:]:
        for r, es in s.items():
            cur = out.get(r)
            out[r] = es if cur is None else _merge(cur, es)
    return out


# ---------------------------------------------------------------------------------------------
# pruning and apportioning


def hot_dependences(function: Function, i: int, deps: tuple[Dependence, ...], sm: int = 90,
                    _lat: dict | None = None) -> tuple[Dependence, ...]:
    """GPA's cold-edge pruning that does not depend on the stall reason: barriers and latency."""
    ins = function.instructions
    lat_cache = _lat if _lat is not None else {}

    def lat(k: int):
        got = lat_cache.get(k)
        if got is None:
            got = lat_cache[k] = defuse.latency(ins[k], sm)
        return got

    use = ins[i]
    waits = set(defuse.barrier_uses(use))
    hot = []
    for d in deps:
        definer = ins[d.def_]
        wb = definer.control.write_barrier if definer.control is not None else None
        bars = [r for r in d.resources if r.startswith("B")]
        if d.via_read_barrier:
            hot.append(d)
            continue
        if wb is not None and wb < 6:
            if defuse.barrier_name(wb) not in waits:
                continue  # variable-latency def the use does not wait for
            lo, hi, fixed = lat(d.def_)
            if d.cycles >= hi:
                continue
            hot.append(d)
            continue
        if bars and not any(not r.startswith("B") for r in d.resources):
            hot.append(d)  # reached through a scoreboard alone
            continue
        lo, hi, fixed = lat(d.def_)
        if definer.control is not None and not fixed:
            # no scoreboard: the hardware runs it at a fixed latency (ULDC, uniform moves)
            lo = min(lo, FIXED_CAP)
        if d.distance >= lo:
            continue  # enough instructions issued in between to cover a fixed latency
        hot.append(d)
    return tuple(hot)


# the def classes a dependency stall can be blamed on, per GPA category of the stall reason
_SYNC_CLASSES = frozenset({"synchronization"})
ELIGIBLE: dict[str, frozenset[str]] = {"memory_dependency": MEMORY_CLASSES,
                                       "execution_dependency": EXECUTION_CLASSES,
                                       "synchronization": _SYNC_CLASSES}


def _classes(ins, deps: tuple[Dependence, ...], cache: dict) -> list[tuple[Dependence, str]]:
    """(dep, ``defuse.def_class`` of its def) for each dep, the classes cached per (def, via read barrier)."""
    out = []
    for d in deps:
        key = (d.def_, d.via_read_barrier)
        cls = cache.get(key)
        if cls is None:
            cls = cache[key] = defuse.def_class(ins[d.def_], d.via_read_barrier)
        out.append((d, cls))
    return out


def _eligible(function: Function, deps: tuple[Dependence, ...], reason: str,
              _cls: dict | None = None) -> list[tuple[Dependence, str]]:
    """The deps whose def class a stall of GPA category ``reason`` can be blamed on."""
    allowed = ELIGIBLE.get(reason, frozenset())
    return [(d, cls) for d, cls in _classes(function.instructions, deps, _cls if _cls is not None else {})
            if cls in allowed]


def _sync_def(function: Function, i: int) -> int | None:
    """The BAR just before instruction ``i`` (a sync stall after a BAR belongs to the BAR)."""
    ins = function.instructions
    for k in (i - 1, i):
        if 0 <= k < len(ins) and ins[k].base_opcode in STALL_BARRIERS:
            return k
    return None


def apportion(stall: float, latency: float, weighted: list[tuple[int, float]]) -> list[tuple[int, float, float]]:
    """Eq. 1: split ``stall`` and ``latency`` over defs by weight I_i / d_i; the parts sum to the whole."""
    total = sum(w for _, w in weighted)
    if total <= 0:
        n = len(weighted)
        return [(k, stall / n, latency / n) for k, _ in weighted]
    return [(k, stall * w / total, latency * w / total) for k, w in weighted]


def blame_function(function: Function, samples: Mapping[int, PCStats], *, sm: int = 90,
                   flow: Flow | None = None) -> FunctionBlame:
    """Blame every sample of ``function`` (offset -> PCStats) on the instruction that caused it.

    Written for speed (it runs on every sampled PC of 20,000-instruction kernels): sample totals
    are summed once, and the per-def facts that pruning needs (scoreboard, latency bounds) are
    computed once per def. The pruning is ``hot_dependences``'s, inlined; the result is the same.
    """
    flow = flow or build_flow(function)
    ins = function.instructions
    offsets = [x.offset for x in ins]
    index_of = {o: k for k, o in enumerate(offsets)}
    sampled: dict[int, PCStats] = {}
    issued_at: dict[int, int] = {}
    totals: dict[int, int] = {}
    latencies: dict[int, int] = {}
    for o, p in samples.items():
        k = index_of.get(o)
        if k is None:
            continue
        total = sum([n for _, n in p.stalls])
        if total > 0:
            sampled[k] = p
            lat = sum([n for _, n in p.not_issued])
            issued_at[k] = total - lat
            totals[o] = total
            latencies[o] = lat
    result = FunctionBlame(function, flow, {offsets[k]: p for k, p in sampled.items()}, totals=totals,
                           latencies=latencies, sm=sm)
    prep = _prepare(function, sm)
    record = _fixpoint(flow, prep, set(sampled))
    waits_of = prep.waits
    # per def index: (write-barrier name or None, lower latency bound for pruning, upper bound);
    # computed by _prepare, or here per def when a caller's _prepare has no sm (a test's)
    limits = prep.limits
    def_info: dict[int, tuple] = {}
    cls_of: dict[int, str] = {}        # def index -> defuse.def_class (not via a read barrier)
    weight_of: dict[int, float] = {}   # def index -> Eq. 1's I_i (issued samples, at least ISSUE_FLOOR)
    cat_cache: dict[str, str] = {}     # reason -> GPA category, for this call
    edges = result.edges
    add = edges.append
    # BlameEdge(...) through tuple.__new__: the same tuples without the NamedTuple's Python-level
    # __new__ frame (10^5 of them on a large kernel)
    new = tuple.__new__
    memory_classes, execution_classes = MEMORY_CLASSES, EXECUTION_CLASSES
    no_deps: dict = {}
    for j, p in sampled.items():
        # hot_dependences's pruning on the raw reaching defs ([distance, cycles, resources, via]),
        # inlined: no Dependence is built (FunctionBlame.dependences makes them when asked)
        waits = waits_of[j]
        raw = record.get(j, no_deps)
        targets_all = []     # (def index, class, distance) per hot dep, by def index
        for k in sorted(raw):
            v = raw[k]
            dist = v[0] if v[0] > 1 else 1
            if not v[3]:
                if limits is not None:
                    info = limits[k]
                else:
                    info = def_info.get(k)
                    if info is None:
                        info = def_info[k] = def_limits(ins[k], sm)
                bname = info[0]
                if bname is not None:
                    if bname not in waits or (v[1] if v[1] > 0 else 0) >= info[2]:
                        continue  # the use does not wait for it / the latency was covered
                elif dist >= info[1] and not all(r[0] == "B" for r in v[2]):
                    continue  # far enough to cover its latency, and not reached through a scoreboard alone
                cls = cls_of.get(k)
                if cls is None:
                    cls = cls_of[k] = defuse.def_class(ins[k], False)
            else:
                cls = "write_after_read"
            targets_all.append((k, cls, dist))
        by_cat: dict[str, list[int]] = {}
        for reason, n in p.stalls:
            c = cat_cache.get(reason)
            if c is None:
                c = cat_cache[reason] = reason_category(reason)
            got = by_cat.get(c)
            if got is None:
                by_cat[c] = [n, 0]
            else:
                got[0] += n
        for reason, n in p.not_issued:
            c = cat_cache.get(reason)
            if c is None:
                c = cat_cache[reason] = reason_category(reason)
            got = by_cat.get(c)
            if got is None:
                by_cat[c] = [0, n]
            else:
                got[1] += n
        use_off = offsets[j]
        for cat, (s, lat) in by_cat.items():
            if s <= 0 and lat <= 0:
                continue
            targets = None
            if cat == "memory_dependency":
                allowed = memory_classes
            elif cat == "execution_dependency":
                allowed = execution_classes
            elif cat == "synchronization":
                k = _sync_def(function, j)
                if k is not None:
                    targets = [(k, "synchronization", max(1, j - k))]
                else:
                    allowed = _SYNC_CLASSES
            else:
                allowed = None
            if targets is None:
                if allowed is not None and targets_all:
                    targets = [t for t in targets_all if t[1] in allowed]
                if not targets:
                    add(new(BlameEdge, (use_off, use_off, cat, "self", float(s), float(lat), 0)))
                    continue
            # Eq. 1 (``apportion``), inlined: weight I_i / d_i
            weights = []
            for t in targets:
                w = weight_of.get(t[0])
                if w is None:
                    w = weight_of[t[0]] = max(float(issued_at.get(t[0], 0)), ISSUE_FLOOR)
                weights.append(w / t[2])
            total = sum(weights)
            s, lat = float(s), float(lat)
            if total <= 0:
                n = len(weights)
                for (k, cls, dist) in targets:
                    add(new(BlameEdge, (offsets[k], use_off, cat, cls, s / n, lat / n, dist)))
            else:
                for (k, cls, dist), w in zip(targets, weights):
                    add(new(BlameEdge, (offsets[k], use_off, cat, cls, s * w / total, lat * w / total, dist)))
    return result
