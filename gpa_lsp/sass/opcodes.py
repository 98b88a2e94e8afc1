"""Opcode families, in one place.

Every set is of base opcodes (``Instruction.base_opcode``: ``"BAR"`` for
``BAR.SYNC.DEFER_BLOCKING``). Where two analyses mean slightly different
things by one word (which barriers, which branches) each has its own set,
named for what it is and built from the others so the difference shows.
The latency classes of the opcodes (what ``arch.latency`` times them as) stay
with their measured bounds in ``arch.py``; the memory space of a memory opcode
stays with the operand decoding in ``operands.py``.
"""

from __future__ import annotations

# --- synchronization ---------------------------------------------------------------------------
#: CTA-wide barriers (``__syncthreads``, named barriers): what a loop body or a load must not cross
CTA_BARRIERS = frozenset({"BAR", "BARRIER"})
#: the barriers and fences a warp waits at between phases of a block (warp balance)
WAIT_BARRIERS = CTA_BARRIERS | {"MEMBAR", "WARPSYNC", "SYNCS"}
#: a barrier that a synchronization stall sampled on it or on the instruction after it belongs to
STALL_BARRIERS = WAIT_BARRIERS | {"ERRBAR"}
#: every opcode whose def GPA classes as synchronization (section 4)
SYNC = STALL_BARRIERS | {"BSYNC", "DEPBAR", "ARRIVES", "CCTL"}

# --- control flow ------------------------------------------------------------------------------
#: the branches the compiler emits for ordinary control flow in a loop body
PLAIN_BRANCHES = frozenset({"BRA", "BRX", "JMP"})
#: every jump within a function (the CFG's taken edges)
BRANCHES = PLAIN_BRANCHES | {"JMX", "BRXU", "JMXU"}
#: instructions whose operand names a target in the function: jumps and the reconvergence setters
BRANCH_TARGET_OPS = BRANCHES | {"BSSY", "SSY", "PBK", "PCNT"}
EXITS = frozenset({"EXIT", "KILL"})
RETURNS = frozenset({"RET"})
CALLS = frozenset({"CALL"})
#: transfers of control that a static instruction count groups as "branch"
CONTROL_TRANSFERS = PLAIN_BRANCHES | CALLS | RETURNS
#: instructions that end a straight-line region: a transfer of control or a warp reconvergence
REGION_ENDS = BRANCHES - {"BRXU", "JMXU"} | {"RET", "EXIT", "CALL", "BSYNC", "WARPSYNC"}
#: control instructions GPA classes as scheduling when blamed (section 4)
SCHEDULING_CONTROL = frozenset({"BRA", "BRX", "CALL", "RET", "EXIT", "BSSY", "NOP"})
#: control instructions that stay when nothing uses their results (besides SYNC)
KEPT_CONTROL = CONTROL_TRANSFERS | {"EXIT", "BSSY", "BREAK", "YIELD", "NOP"}

# --- arithmetic --------------------------------------------------------------------------------
#: every type conversion
CONVERSIONS = frozenset({"F2F", "I2F", "F2I", "I2FP", "F2IP", "FRND", "I2I", "F2FP"})
#: the conversions a static instruction count groups as "conversion" (I2FP and F2IP left out)
COUNTED_CONVERSIONS = CONVERSIONS - {"I2FP", "F2IP"}
#: conversions whose operand widths follow their type modifiers (FRND rounds in place)
TYPED_CONVERSIONS = CONVERSIONS - {"FRND"}
MUFU = frozenset({"MUFU"})
#: double-precision arithmetic (its latency and its count)
FP64 = frozenset({"DADD", "DMUL", "DFMA", "DSETP", "DMNMX"})
#: opcodes whose register operands are 64-bit pairs
FP64_OPERANDS = FP64 | {"DSET", "DMMA"}
#: bit counts and reversals (POPC class)
BIT_COUNTS = frozenset({"POPC", "FLO", "BREV"})
#: integer multiplies as a static instruction count groups them
INTEGER_MULTIPLIES = frozenset({"IMAD", "IMUL"})
#: special registers, votes and shuffles (scheduling when blamed)
SPECIAL = frozenset({"S2R", "CS2R", "S2UR", "B2R", "R2B", "VOTE", "MATCH", "SHFL", "GETLMEMBASE"})

# --- memory ------------------------------------------------------------------------------------
LOCAL_MEMORY = frozenset({"LDL", "STL"})
LOCAL_LOADS = frozenset({"LDL"})
#: a load from global memory as a static instruction count groups it
GLOBAL_LOAD = frozenset({"LDG"})
#: loads of global (or generic) memory
GLOBAL_LOADS = frozenset({"LDG", "LD"})
#: stores and reductions to global (or generic) memory
GLOBAL_WRITES = frozenset({"STG", "ST", "RED", "ATOM", "ATOMG"})
SHARED_LOADS = frozenset({"LDS"})
SHARED_STORES = frozenset({"STS"})
#: every shared-memory access
SHARED_ACCESSES = frozenset({"LDS", "STS", "LDSM", "ATOMS"})
#: stores to shared, global or generic memory
PLAIN_STORES = SHARED_STORES | {"STG", "ST"}
#: instructions that go through the MIO queue besides shared-memory accesses
MIO_OTHER = frozenset({"S2R", "SHFL", "MUFU", "I2F", "F2I", "F2F", "I2FP", "F2IP", "FRND", "POPC", "FLO", "BREV",
                       "LDC", "ULDC", "ATOMS", "VOTE", "MATCH", "BAR", "MEMBAR"})
