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

from ..sass.defuse import register_defs, register_uses
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


def _taint_before(function: Function) -> _BeforeStates:
    """Per instruction index: the registers that may hold a value derived from the thread's
    identity, and those that may hold one derived from memory, on entry (forward may-analysis over
    the CFG, union at joins; a guarded def keeps what the register held)."""
    ins_list = function.instructions
    pos, blocks, preds = forward_blocks(function)

    def transfer(ins, thread: set[str], data: set[str]) -> None:
        uses = register_uses(ins)
        t, d = _sources(ins)
        t = t or bool(uses & thread)
        d = d or bool(uses & data)
        for reg in register_defs(ins):
            for taint, on in ((thread, t), (data, d)):
                if on:
                    taint.add(reg)
                elif not ins.predicate:
                    taint.discard(reg)

    out: dict[int, tuple[frozenset[str], frozenset[str]]] = {b.start: (frozenset(), frozenset()) for b in blocks}

    def entry_state(b) -> tuple[set[str], set[str]]:
        thread: set[str] = set()
        data: set[str] = set()
        for p in preds[b.start]:
            t, d = out.get(p, (frozenset(), frozenset()))
            thread |= t
            data |= d
        return thread, data

    changed = True
    while changed:
        changed = False
        for b in blocks:
            thread, data = entry_state(b)
            for off in b.instructions:
                transfer(ins_list[pos[off]], thread, data)
            new = (frozenset(thread), frozenset(data))
            if new != out[b.start]:
                out[b.start] = new
                changed = True
    def replay(b) -> list:
        thread, data = entry_state(b)
        states = []
        for off in b.instructions:
            states.append((frozenset(thread), frozenset(data)))
            transfer(ins_list[pos[off]], thread, data)
        return states
    return _BeforeStates(blocks, pos, replay)


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


def _pointer_params(function: Function, pointers: frozenset[int]) -> _BeforeStates:
    """Per instruction index: for each register, the pointer parameters (their constant-bank
    offsets, ``pointers``) its value derives from on entry (``_UNKNOWN`` for a value loaded from
    memory); forward may-analysis, union at joins, a guarded def keeps what the register held."""
    ins_list = function.instructions
    pos, blocks, preds = forward_blocks(function)

    def transfer(ins, state: dict[str, frozenset[int]]) -> None:
        m = ins.memory
        if m is not None and m.space != "constant" and (m.load or m.atomic):
            got = frozenset({_UNKNOWN})
        else:
            got = frozenset(off for bank, off in ins.cbank if bank == 0 and off in pointers)
            for r in register_uses(ins):
                got |= state.get(r, frozenset())
        for reg in register_defs(ins):
            state[reg] = got | state.get(reg, frozenset()) if ins.predicate else got

    def merged(b) -> dict[str, frozenset[int]]:
        state: dict[str, frozenset[int]] = {}
        for p in preds[b.start]:
            for r, v in out.get(p, {}).items():
                state[r] = state.get(r, frozenset()) | v
        return state

    out: dict[int, dict[str, frozenset[int]]] = {b.start: {} for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in blocks:
            state = merged(b)
            for off in b.instructions:
                transfer(ins_list[pos[off]], state)
            if state != out[b.start]:
                out[b.start] = state
                changed = True
    def replay(b) -> list:
        state = merged(b)
        states = []
        for off in b.instructions:
            states.append(dict(state))
            transfer(ins_list[pos[off]], state)
        return states
    return _BeforeStates(blocks, pos, replay)


class _BeforeStates:
    """Instruction index -> an analysis' state on entry to it, as a dict's ``get`` answers, computed a
    block at a time when first asked (``replay(block)``: the states before each of its instructions,
    from the converged block-entry states).

    Why not a dict filled for every instruction: ``work_loops`` asks at a loop's exits, header and
    memory accesses only, and a copy of the state per instruction cost more than the fixpoint
    itself on kernels of thousands of loops (and ~170 MB at 47k instructions)."""

    def __init__(self, blocks, pos: dict[int, int], replay) -> None:
        self._where: dict[int, tuple[int, int]] = {}       # index -> (block number, position in it)
        for k, b in enumerate(blocks):
            for j, off in enumerate(b.instructions):
                self._where[pos[off]] = (k, j)
        self._blocks = blocks
        self._replay = replay
        self._done: dict[int, list] = {}

    def get(self, index: int, default=None):
        at = self._where.get(index)
        if at is None:
            return default
        k, j = at
        states = self._done.get(k)
        if states is None:
            states = self._done[k] = self._replay(self._blocks[k])
        return states[j]


def _reads_what_it_writes(function: Function, members, params) -> bool:
    """The loop's global loads and stores may touch the same array: an address of each derives from
    the same kernel parameter, or one comes from memory."""
    loads: set[int] = set()
    stores: set[int] = set()
    for i in members:
        ins = function.instructions[i]
        m = ins.memory
        if m is None or m.space not in ("global", "generic"):
            continue
        brackets = (memory_operand(ins.operands) or "").rsplit("[", 1)
        regs = address_registers("[" + brackets[-1]) if len(brackets) > 1 else frozenset()
        got = set().union(*(params.get(i, {}).get(r, frozenset()) for r in regs)) if regs else set()
        if m.store or m.atomic:
            stores |= got
        if m.load:
            loads |= got
    return bool(loads & stores) or (_UNKNOWN in loads and bool(stores)) or (_UNKNOWN in stores and bool(loads))


def _live_in(function: Function) -> dict[int, frozenset[str]]:
    """Registers live on entry to each block (backward liveness; a guarded def kills nothing)."""
    ins_list = function.instructions
    pos = {ins.offset: i for i, ins in enumerate(ins_list)}
    blocks = [b for b in function.blocks if b.instructions]
    succs: dict[int, list[int]] = {b.start: [] for b in blocks}
    for e in function.edges:
        if e.kind in ("fallthrough", "taken", "not_taken") and e.src in succs and e.dst in succs:
            succs[e.src].append(e.dst)
    gen_kill = {}
    for b in blocks:
        gen: set[str] = set()
        kill: set[str] = set()
        for off in b.instructions:
            ins = ins_list[pos[off]]
            gen |= register_uses(ins) - kill
            if not ins.predicate:
                kill |= register_defs(ins)
        gen_kill[b.start] = (frozenset(gen), frozenset(kill))
    live: dict[int, frozenset[str]] = {b.start: frozenset() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            out = frozenset().union(*(live[s] for s in succs[b.start]))
            gen, kill = gen_kill[b.start]
            new = gen | (out - kill)
            if new != live[b.start]:
                live[b.start] = new
                changed = True
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
    taint = live = params = None
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
        if taint is None:
            taint, live = _taint_before(fn), _live_in(fn)
            pointers = pointer_offsets(fn.demangled or "")
            params = _pointer_params(fn, pointers) if pointers is not None else None
        if params is not None and _reads_what_it_writes(fn, members, params):
            continue
        bad_exit = False
        for br in exits:
            thread, data = taint.get(index[br.offset], (frozenset(), frozenset()))
            if register_uses(br) & (thread | data):
                bad_exit = True
                break
        if bad_exit:
            continue
        written = set().union(*(register_defs(ins_list[i]) for i in members))
        carried = live[loop.header] & written
        regs = {r for r in carried if not r.startswith(("P", "UP"))}
        preds = carried - regs
        if regs & _non_affine_at_header(fn, lp, body, index, edges_to):
            continue
        _, data_in = taint.get(index[loop.header], (frozenset(), frozenset()))
        if preds & data_in:
            continue
        latch = max((e.src for e in edges_to.get(loop.header, ()) if e.src in loop.blocks), default=None)
        if latch is None:
            continue
        update = by_start[latch].instructions[-1]
        found.append(WorkLoop(lp.header_offset, update, lp.line, members))
    return tuple(sorted(found, key=lambda w: w.header))
