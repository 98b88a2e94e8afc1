"""Work loops: a serial loop that every thread runs the same number of times, whose iterations are
independent, and which can be cut into strips -- one block row per strip -- for more warps.

The shape (kernels/zscore_features, the calibration case): a grid under one wave where each thread
walks a loop over rows (or planes, or items) whose trip count is a kernel argument. Cutting the
loop's range into ``S`` strips over a new grid dimension (``blockIdx.y``, or ``z`` when the grid
is 2D already) runs the same instructions on ``S`` times the warps: the mechanism of a grid-stride
loop grown to a full wave (analysis/waves.py), found by a different test in the SASS. Three
conditions make the cut a mechanical one:

* **the trip count does not depend on the thread or on data**: every branch that leaves or closes
  the loop tests values derived neither from ``threadIdx``/``blockIdx`` (``S2R SR_TID``/
  ``SR_CTAID``, ``S2UR``) nor from memory (a load's value, an atomic's, a shuffle's); a loop bound
  read from a CSR row pointer or starting at the thread index is neither cut nor advised;
* **no value goes from one iteration to the next except inductions**: every register live around
  the back edge (live into the header and written in the loop) is written in the loop only by
  integer add / multiply-add / shift-add / move instructions (``IADD3``, ``IMAD``, ``LEA``,
  ``MOV``, ...) of loop-carried or loop-invariant values -- the loop counter and the addresses.
  A sum, a maximum, a running value carried in a register (a floating-point op or a load around
  the back edge) is a reduction: a strip would need a combine step, so it is not advised in this
  form. Predicates carried around the back edge must not hold data either;
* **no communication between the iterations through shared memory**: a loop that stores to and
  loads from shared memory may hand values from one iteration to the next (tiles, wavefronts),
  which registers do not show; it is left out.

* **no load through the pointer the loop stores through**: a loop that loads from and stores to
  global addresses derived from the same kernel parameter (``c[0x0][0x210+]`` on sm_90) may read
  what an earlier iteration wrote (an in-place recurrence down a column); it is left out, as is a
  loop whose addresses come from memory (pointers loaded at run time). The pointer parameters are
  read from the demangled signature (their offsets follow the parameters' sizes); a signature
  with a parameter of unknown size (a struct) skips this test.

Two different pointer parameters may still point into the same array at run time, which the
SASS cannot show; the advice says to check that no iteration reads what an earlier one wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpa_lsp.sass.model import Function

from ..sass.defuse import ZERO_REGISTERS, register_defs, register_uses
from ..sass.operands import address_registers, memory_operand
from .flow import forward_blocks, loop_scopes, with_cfg

# integer ops that keep a value an affine function of the inductions and invariants: the counter and
# the addresses (64-bit adds go through IADD3 + IADD3.X with a carry predicate; IMAD.WIDE, LEA/LEA.HI.X)
_AFFINE = frozenset({"IADD3", "IADD", "IADD32I", "VIADD", "IMAD", "IMUL", "LEA", "MOV", "UIADD3", "UIMAD",
                     "ULEA", "UMOV", "UIADD32I", "ISCADD"})
_SHIFT_LEFT = ("SHF.L", "USHF.L")    # a multiply by 2^k (SHF.R is not: a sign or a quotient)
_THREAD_SR = ("SR_TID", "SR_CTAID", "SR_LANEID", "SR_VIRTUALSMID", "SR_SMID", "SR_WARPID")
PARAMS = 0x210               # the first kernel parameter, c[0x0][0x210] on sm_90 (0x208: the memory descriptor)
_UNKNOWN = -1                # an address loaded from memory: any parameter's array
_DATA_OPS = frozenset({"SHFL", "VOTE", "VOTEU", "MATCH", "REDUX", "CS2R", "ATOM", "ATOMG", "ATOMS", "RED",
                       "REDG", "POPC"})


@dataclass(frozen=True)
class WorkLoop:
    header: int                  # offset of the loop's header block
    update: int                  # offset of the back-edge branch (its block runs once per pass)
    line: int | None             # the loop's source line
    instructions: frozenset[int]  # instruction indices of the body


def _sources(ins) -> tuple[bool, bool]:
    """(thread, data): whether ``ins`` makes a value from the thread's identity or from memory."""
    base = ins.base_opcode
    if base in ("S2R", "S2UR"):
        special = " ".join(ins.operands)
        return (any(s in special for s in _THREAD_SR), not any(s in special for s in _THREAD_SR))
    if ins.memory is not None and ins.memory.space != "constant" and (ins.memory.load or ins.memory.atomic):
        return False, True
    return False, base in _DATA_OPS


class _Flow:
    """What the forward analyses and liveness share, computed once per function: each instruction's
    register uses and defs (``register_uses``/``register_defs`` allocate a set per call, and the
    fixpoints ask for each instruction two to three times), the non-empty blocks in layout order with
    each one's instruction indices, and its predecessors and successors over the fallthrough and
    branch edges (``forward_blocks``'s)."""

    def __init__(self, function: Function) -> None:
        ins_list = function.instructions
        # register_uses/register_defs, as one set difference each
        self.uses = [frozenset(ins.srcs) - ZERO_REGISTERS for ins in ins_list]
        self.defs = [frozenset(ins.dsts) - ZERO_REGISTERS for ins in ins_list]
        pos, self.blocks, self.preds = forward_blocks(function)
        self.pos = pos
        self.members = {b.start: [pos[off] for off in b.instructions] for b in self.blocks}
        self.succs: dict[int, list[int]] = {b.start: [] for b in self.blocks}
        for dst, srcs in self.preds.items():
            for src in srcs:
                if src in self.succs:
                    self.succs[src].append(dst)


def _fixpoint(run, out: dict, order, feeds) -> None:
    """Iterate ``out[b] = run(b)`` over the blocks in ``order`` until nothing changes; a block is run
    again only when a block it reads changed since its last run (``feeds[b]``: the blocks that read
    ``b``'s state, due again when it changes).

    Why this gives the same states as the round-robin over all blocks it replaced: the analyses are
    monotone and start from the empty state, so any order that runs every block whose inputs
    changed reaches the same least fixpoint; skipping the unchanged ones is what makes a kernel of
    thousands of loops cost about one pass and its loop bodies a second, not two whole passes."""
    due = {b.start for b in order}
    while due:
        for b in order:
            if b.start not in due:
                continue
            due.discard(b.start)
            new = run(b)
            if new != out[b.start]:
                out[b.start] = new
                due.update(feeds[b.start])


def _taint_before(function: Function, flow: _Flow | None = None) -> _BeforeStates:
    """Per instruction index: the registers that may hold a value derived from the thread's
    identity, and those that may hold one derived from memory, on entry (forward may-analysis over
    the CFG, union at joins; a guarded def keeps what the register held)."""
    ins_list = function.instructions
    flow = flow or _Flow(function)
    uses, defs, preds, members = flow.uses, flow.defs, flow.preds, flow.members
    sources = [_sources(ins) for ins in ins_list]
    guarded = [bool(ins.predicate) for ins in ins_list]

    def transfer(i: int, thread: set[str], data: set[str]) -> None:
        d_i = defs[i]
        if not d_i:
            return
        u = uses[i]
        t, d = sources[i]
        t = t or not u.isdisjoint(thread)
        d = d or not u.isdisjoint(data)
        if t:
            thread |= d_i
        elif not guarded[i]:
            thread -= d_i
        if d:
            data |= d_i
        elif not guarded[i]:
            data -= d_i

    empty = (frozenset(), frozenset())
    out: dict[int, tuple[frozenset[str], frozenset[str]]] = {b.start: empty for b in flow.blocks}

    def entry_state(b) -> tuple[set[str], set[str]]:
        thread: set[str] = set()
        data: set[str] = set()
        for p in preds[b.start]:
            t, d = out.get(p, empty)
            thread |= t
            data |= d
        return thread, data

    def run(b):
        thread, data = entry_state(b)
        for i in members[b.start]:
            transfer(i, thread, data)
        return (frozenset(thread), frozenset(data))

    _fixpoint(run, out, flow.blocks, flow.succs)

    def replay(b, wanted: set[int]) -> dict:
        thread, data = entry_state(b)
        states = {}
        for j, i in enumerate(members[b.start]):
            if j in wanted:
                states[j] = (frozenset(thread), frozenset(data))
            transfer(i, thread, data)
        return states
    return _BeforeStates(flow, replay)


_SCALARS = {"bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2,
            "int": 4, "unsigned int": 4, "float": 4, "long": 8, "unsigned long": 8, "long long": 8,
            "unsigned long long": 8, "double": 8, "__half": 2, "__nv_bfloat16": 2}


def pointer_offsets(demangled: str) -> frozenset[int] | None:
    """The constant-bank offsets of a kernel's pointer parameters, from its demangled signature
    (``conv_cols(float*, float const*, int, int)``: 0x210, 0x218); None when a parameter's size is
    not known here (a struct, a template class) and the layout cannot be followed."""
    if "(" not in demangled or not demangled.endswith(")"):
        return None
    inner = demangled[demangled.index("(") + 1:-1]
    params, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur.strip())
    out, at = set(), PARAMS
    for p in params:
        if p.endswith("*") or p.endswith("* const") or p.endswith("*__restrict__"):
            size = 8
            at = (at + 7) // 8 * 8
            out.add(at)
        else:
            base = " ".join(w for w in p.replace("const", " ").split())
            size = _SCALARS.get(base)
            if size is None:
                return None
            at = (at + size - 1) // size * size
        at += size
    return frozenset(out)


def _pointer_params(function: Function, pointers: frozenset[int], flow: _Flow | None = None) -> _BeforeStates:
    """Per instruction index: for each register, the pointer parameters (their constant-bank
    offsets, ``pointers``) its value derives from on entry (``_UNKNOWN`` for a value loaded from
    memory); forward may-analysis, union at joins, a guarded def keeps what the register held.
    A state holds only the registers with a non-empty set (a register not in it derives from no
    parameter): the states stay small where most registers hold plain values, and a join or a
    comparison costs what they hold, not the register file."""
    ins_list = function.instructions
    flow = flow or _Flow(function)
    uses, defs, preds, members = flow.uses, flow.defs, flow.preds, flow.members
    loaded = frozenset({_UNKNOWN})
    nothing: frozenset[int] = frozenset()
    # per instruction: None (no register def), or (the parameters it reads itself, or ``loaded``;
    # whether its uses add theirs; guarded)
    step: list = []
    for i, ins in enumerate(ins_list):
        if not defs[i]:
            step.append(None)
            continue
        m = ins.memory
        if m is not None and m.space != "constant" and (m.load or m.atomic):
            step.append((loaded, False, bool(ins.predicate)))
        else:
            own = frozenset(off for bank, off in ins.cbank if bank == 0 and off in pointers)
            step.append((own, True, bool(ins.predicate)))

    def transfer(i: int, state: dict[str, frozenset[int]]) -> None:
        st = step[i]
        if st is None:
            return
        got, from_uses, guard = st
        if from_uses:
            for r in uses[i]:
                v = state.get(r)
                if v:
                    got = got | v
        if guard:
            if got:
                for reg in defs[i]:
                    state[reg] = got | state.get(reg, nothing)
        elif got:
            for reg in defs[i]:
                state[reg] = got
        else:
            for reg in defs[i]:
                state.pop(reg, None)

    def merged(b) -> dict[str, frozenset[int]]:
        ps = preds[b.start]
        if len(ps) == 1:
            return dict(out.get(ps[0], {}))
        state: dict[str, frozenset[int]] = {}
        for p in ps:
            for r, v in out.get(p, {}).items():
                w = state.get(r)
                state[r] = v if w is None else w | v
        return state

    out: dict[int, dict[str, frozenset[int]]] = {b.start: {} for b in flow.blocks}

    def run(b):
        state = merged(b)
        for i in members[b.start]:
            transfer(i, state)
        return state

    _fixpoint(run, out, flow.blocks, flow.succs)

    def replay(b, wanted: set[int]) -> dict:
        state = merged(b)
        states = {}
        for j, i in enumerate(members[b.start]):
            if j in wanted:
                states[j] = dict(state)
            transfer(i, state)
        return states
    return _BeforeStates(flow, replay)


class _BeforeStates:
    """Instruction index -> an analysis' state on entry to it (``at``), computed from the converged
    block-entry states when asked (``replay(block, positions)``: the states before those of its
    instructions).

    Why not a dict filled for every instruction: ``work_loops`` asks at a loop's exits, header and
    memory accesses only, and a copy of the state per instruction cost more than the fixpoint
    itself on kernels of thousands of loops (and ~170 MB at 47k instructions). ``at`` answers many
    indices with one replay per block."""

    def __init__(self, flow: _Flow, replay) -> None:
        self._where: dict[int, tuple[int, int]] = {}       # index -> (block start, position in it)
        self._block = {b.start: b for b in flow.blocks}
        for b in flow.blocks:
            for j, i in enumerate(flow.members[b.start]):
                self._where[i] = (b.start, j)
        self._replay = replay

    def at(self, indices) -> dict:
        """Index -> state for each of ``indices`` that lies in a block."""
        by_block: dict[int, dict[int, int]] = {}
        for i in indices:
            w = self._where.get(i)
            if w is not None:
                by_block.setdefault(w[0], {})[w[1]] = i
        got = {}
        for start, wanted in by_block.items():
            states = self._replay(self._block[start], set(wanted))
            for j, i in wanted.items():
                got[i] = states[j]
        return got


def _reads_what_it_writes(function: Function, members, params) -> bool:
    """The loop's global loads and stores may touch the same array: an address of each derives from
    the same kernel parameter, or one comes from memory."""
    loads: set[int] = set()
    stores: set[int] = set()
    accesses = []
    for i in members:
        ins = function.instructions[i]
        m = ins.memory
        if m is None or m.space not in ("global", "generic"):
            continue
        brackets = (memory_operand(ins.operands) or "").rsplit("[", 1)
        regs = address_registers("[" + brackets[-1]) if len(brackets) > 1 else frozenset()
        accesses.append((i, m, regs))
    before = params.at([i for i, _, regs in accesses if regs])     # one replay per block
    for i, m, regs in accesses:
        got = set().union(*(before.get(i, {}).get(r, frozenset()) for r in regs)) if regs else set()
        if m.store or m.atomic:
            stores |= got
        if m.load:
            loads |= got
    return bool(loads & stores) or (_UNKNOWN in loads and bool(stores)) or (_UNKNOWN in stores and bool(loads))


def _live_in(function: Function, flow: _Flow | None = None) -> dict[int, frozenset[str]]:
    """Registers live on entry to each block (backward liveness; a guarded def kills nothing)."""
    ins_list = function.instructions
    flow = flow or _Flow(function)
    uses, defs, succs = flow.uses, flow.defs, flow.succs
    gen_kill = {}
    for b in flow.blocks:
        gen: set[str] = set()
        kill: set[str] = set()
        for i in flow.members[b.start]:
            gen |= uses[i] - kill
            if not ins_list[i].predicate:
                kill |= defs[i]
        gen_kill[b.start] = (frozenset(gen), frozenset(kill))
    live: dict[int, frozenset[str]] = {b.start: frozenset() for b in flow.blocks}

    def run(b):
        out = frozenset().union(*(live[s] for s in succs[b.start]))
        gen, kill = gen_kill[b.start]
        return gen | (out - kill)

    readers = {b.start: [p for p in flow.preds[b.start] if p in live] for b in flow.blocks}
    _fixpoint(run, live, flow.blocks[::-1], readers)
    return live


def _non_affine_at_header(function: Function, lp, body_blocks, pos: dict[int, int] | None = None,
                          edges_to: dict[int, list] | None = None) -> frozenset[str]:
    """Registers that may reach the loop's header around a back edge holding a value that is not an
    affine integer function of the inductions and invariants (forward over the body; values from
    outside the loop count as invariant). ``pos`` (offset -> index) and ``edges_to`` (block ->
    edges into it, in ``function.edges`` order) are the function's, passed by ``work_loops`` so
    that each loop costs its own size, not the function's (thousands of loops)."""
    ins_list = function.instructions
    if pos is None:
        pos = {ins.offset: i for i, ins in enumerate(ins_list)}
    if edges_to is None:
        edges_to = _edges_by(function.edges, "dst")
    starts = {b.start for b in body_blocks}
    preds: dict[int, list[int]] = {b.start: [] for b in body_blocks}
    for b in body_blocks:
        for e in edges_to.get(b.start, ()):
            if e.kind in ("fallthrough", "taken", "not_taken") and e.src in starts:
                preds[b.start].append(e.src)
    out: dict[int, frozenset[str]] = {b.start: frozenset() for b in body_blocks}
    changed = True
    while changed:
        changed = False
        for b in body_blocks:
            cur: set[str] = set().union(*(out[p] for p in preds[b.start]))
            for off in b.instructions:
                ins = ins_list[pos[off]]
                defs = register_defs(ins)
                if not defs:
                    continue
                uses = register_uses(ins)
                constant_load = ins.memory is not None and ins.memory.space == "constant"
                if uses & cur:
                    bad = True
                elif ins.base_opcode in _AFFINE or ins.opcode.startswith(_SHIFT_LEFT) or constant_load:
                    bad = False         # an induction step, an address, a kernel argument (ULDC)
                else:                   # a constant (HFMA2.MMA R, -RZ, RZ, 0, 0; CS2R R, SRZ) is no data
                    bad = bool(uses - {ins.predicate}) or ins.base_opcode in ("S2R", "S2UR") or ins.memory is not None
                if bad:
                    cur |= defs
                elif not ins.predicate:
                    cur -= defs
            if frozenset(cur) != out[b.start]:
                out[b.start] = frozenset(cur)
                changed = True
    header = lp.header_offset
    return frozenset().union(*(out[p] for p in preds.get(header, ())))


def _edges_by(edges, end: str) -> dict[int, list]:
    """Block offset -> the edges (or (position, edge) pairs) whose ``end`` ("src"/"dst") it is, in order."""
    out: dict[int, list] = {}
    for item in edges:
        e = item[1] if isinstance(item, tuple) else item
        out.setdefault(getattr(e, end), []).append(item)
    return out


def work_loops(function: Function) -> tuple[WorkLoop, ...]:
    """The outermost loops of ``function`` that can be cut into strips (the three conditions of the
    module docstring), in layout order. nvcc's versions of one source loop (an unrolled body and
    its remainder) are separate loops here; each is tested on its own."""
    fn = with_cfg(function)
    if not fn.loops:
        return ()
    ins_list = fn.instructions
    taint = live = params = flow = None
    by_start = {b.start: b for b in fn.blocks}
    # function-wide indexes, built once: per loop, a scan of every instruction, loop and edge made
    # this quadratic in a kernel of many loops in sequence (issue 16: 26 s at 2,400 loops)
    index = {ins.offset: i for i, ins in enumerate(ins_list)}
    loop_at: dict[int, object] = {}
    for x in fn.loops:
        loop_at.setdefault(x.header, x)           # the first with that header, as a scan finds
    numbered = list(enumerate(fn.edges))
    edges_from = _edges_by(numbered, "src")      # (position, edge), in fn.edges order
    edges_to = _edges_by(fn.edges, "dst")
    found = []
    for lp in loop_scopes(fn):
        if lp.parent is not None:
            continue
        loop = loop_at[lp.header_offset]
        body = [by_start[s] for s in sorted(loop.blocks) if s in by_start and by_start[s].instructions]
        members = lp.instructions
        shared = [ins_list[i].memory for i in members if ins_list[i].memory is not None
                  and ins_list[i].memory.space == "shared"]
        if any(m.store or m.atomic for m in shared) and any(m.load for m in shared):
            continue
        # the branches that leave or close the loop
        exits = []
        leaving = sorted((p for s in loop.blocks for p in edges_from.get(s, ())), key=lambda p: p[0])
        for _, e in leaving:        # the loop's blocks' edges, in fn.edges order
            if e.kind in ("taken", "not_taken") and (e.dst not in loop.blocks or e.dst == loop.header):
                last = ins_list[max(i for i in members if ins_list[i].offset < by_start[e.src].end
                                    and ins_list[i].offset >= e.src)]
                exits.append(last)
        # a guarded EXIT/RET inside the body leaves the loop too (an early return)
        exits += [ins_list[i] for i in members if ins_list[i].predicate
                  and ins_list[i].base_opcode in ("EXIT", "RET", "BREAK", "BRK")]
        if not exits:
            continue
        # the tests are a conjunction: the cheaper ones first, each whole-function analysis made
        # when a loop first gets that far (a kernel whose loops all stop at the exit test never
        # pays for liveness or the pointer parameters)
        if taint is None:
            flow = _Flow(fn)
            taint = _taint_before(fn, flow)
        before = taint.at([index[br.offset] for br in exits])     # one replay per block
        if any(flow.uses[index[br.offset]] & (thread | data)
               for br in exits for thread, data in [before.get(index[br.offset], (frozenset(), frozenset()))]):
            continue
        if live is None:
            live = _live_in(fn, flow)
        written = set().union(*(flow.defs[i] for i in members))
        carried = live[loop.header] & written
        regs = {r for r in carried if not r.startswith(("P", "UP"))}
        preds = carried - regs
        if regs & _non_affine_at_header(fn, lp, body, index, edges_to):
            continue
        _, data_in = taint.at((index[loop.header],)).get(index[loop.header], (frozenset(), frozenset()))
        if preds & data_in:
            continue
        latch = max((e.src for e in edges_to.get(loop.header, ()) if e.src in loop.blocks), default=None)
        if latch is None:
            continue
        if params is None:
            pointers = pointer_offsets(fn.demangled or "")
            params = _pointer_params(fn, pointers, flow) if pointers is not None else False
        if params and _reads_what_it_writes(fn, members, params):
            continue
        update = by_start[latch].instructions[-1]
        found.append(WorkLoop(lp.header_offset, update, lp.line, members))
    return tuple(sorted(found, key=lambda w: w.header))
