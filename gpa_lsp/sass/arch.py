"""Per-architecture limits (occupancy inputs) and instruction latency classes.

Limits are the CUDA Programming Guide's per-compute-capability table.
:func:`from_device` replaces them with what the driver reports when a GPU and
cuda-python are present (imported lazily: no GPU must be fine).

Latencies: ``latency(ins, sm)`` picks a per-architecture table.
- sm_90 (Hopper): :data:`LATENCY_SM90`, measured on an H100 (SXM, 80 GB HBM3)
  by ``benchmarks/latency`` (dependent chains timed with clock64; the run's
  output is ``benchmarks/latency/latency.h100.json``; :data:`SM90_SOURCES`
  says which measurement each bound comes from). Fixed-latency classes have
  lower = upper = the measured cycles; memory classes have lower = the fastest
  hit measured and upper = the DRAM miss (shared memory: a 32-way bank
  conflict); classes of several measured instructions span their min..max.
- every other architecture, and ``sm=None``: GPA's published Volta/Ampere
  bounds (gpa-method.md); Blackwell is *not* measured. Classes not in GPA's
  table (S2R, SHFL, tensor-core MMA) carry our own rough bounds there.
Whether a def is variable-latency is decided by the hardware's own rule when
the control code is known: the compiler gives a result a write scoreboard
exactly when its latency is not fixed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .model import Instruction


@dataclass(frozen=True)
class ArchSpec:
    sm: int
    warps_per_sm: int
    schedulers_per_sm: int
    registers_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int             # bytes, the largest carve-out
    max_threads_per_block: int
    max_shared_per_block: int      # bytes (opt-in maximum)
    reserved_shared_per_block: int = 1024   # the driver's reservation (sm_80+)
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256          # registers per warp are allocated in these units
    sm_count: int | None = None             # only known from a device
    name: str = ""

    @property
    def max_threads_per_sm(self) -> int:
        return self.warps_per_sm * 32


_K = 1024
TABLE: dict[int, ArchSpec] = {
    70: ArchSpec(70, 64, 4, 65536, 32, 96 * _K, 1024, 96 * _K, 0, name="Volta"),
    75: ArchSpec(75, 32, 4, 65536, 16, 64 * _K, 1024, 64 * _K, 0, name="Turing"),
    80: ArchSpec(80, 64, 4, 65536, 32, 164 * _K, 1024, 163 * _K, name="Ampere (A100)"),
    86: ArchSpec(86, 48, 4, 65536, 16, 100 * _K, 1024, 99 * _K, name="Ampere (GA10x)"),
    89: ArchSpec(89, 48, 4, 65536, 24, 100 * _K, 1024, 99 * _K, name="Ada"),
    90: ArchSpec(90, 64, 4, 65536, 32, 228 * _K, 1024, 227 * _K, name="Hopper"),
    100: ArchSpec(100, 64, 4, 65536, 32, 228 * _K, 1024, 227 * _K, name="Blackwell (B200)"),
    120: ArchSpec(120, 48, 4, 65536, 32, 128 * _K, 1024, 99 * _K, name="Blackwell (RTX)"),
}


def arch(sm: int) -> ArchSpec:
    """Limits of ``sm`` (e.g. 90); an unknown SM takes the nearest known one below it."""
    if sm in TABLE:
        return TABLE[sm]
    lower = [k for k in TABLE if k <= sm]
    base = TABLE[max(lower)] if lower else TABLE[min(TABLE)]
    return dataclasses.replace(base, sm=sm)


arch_spec = arch  # the name exported by gpa_lsp.sass (where ``arch`` is this module)


def from_device(device: int = 0) -> ArchSpec | None:
    """Limits reported by the driver for ``device``, or None without cuda-python or a GPU."""
    try:  # deferred: optional here (None without cuda-bindings)
        try:
            from cuda.bindings import runtime as rt  # cuda-python >= 12.6
        except ImportError:
            from cuda import cudart as rt  # type: ignore[no-redef]
    except Exception:
        return None
    try:
        def attr(name: str) -> int:
            err, val = rt.cudaDeviceGetAttribute(getattr(rt.cudaDeviceAttr, name), device)
            if int(err) != 0:
                raise RuntimeError(name)
            return int(val)

        major = attr("cudaDevAttrComputeCapabilityMajor")
        minor = attr("cudaDevAttrComputeCapabilityMinor")
        base = arch(major * 10 + minor)
        return dataclasses.replace(
            base,
            warps_per_sm=attr("cudaDevAttrMaxThreadsPerMultiProcessor") // 32,
            registers_per_sm=attr("cudaDevAttrMaxRegistersPerMultiprocessor"),
            max_blocks_per_sm=attr("cudaDevAttrMaxBlocksPerMultiprocessor"),
            shared_per_sm=attr("cudaDevAttrMaxSharedMemoryPerMultiprocessor"),
            max_threads_per_block=attr("cudaDevAttrMaxThreadsPerBlock"),
            max_shared_per_block=attr("cudaDevAttrMaxSharedMemoryPerBlockOptin"),
            reserved_shared_per_block=attr("cudaDevAttrReservedSharedMemoryPerBlock"),
            sm_count=attr("cudaDevAttrMultiProcessorCount"),
        )
    except Exception:
        return None


# ---- latency classes -------------------------------------------------------------------------

#: class -> (lower, upper, fixed): GPA's Volta/Ampere bounds (the default and every arch but sm_90)
LATENCY: dict[str, tuple[int, int, bool]] = {
    "integer": (4, 4, True),
    "imad": (5, 5, True),
    "imad_wide": (5, 5, True),             # GPA has no separate class: IMAD's
    "popc": (10, 10, True),
    "predicate": (5, 5, True),
    "conversion": (14, 14, False),
    "alu_conversion": (4, 4, True),        # I2FP (sm_86+): not in GPA's table, like integer
    "mufu": (14, 14, False),
    "fp16": (6, 6, True),
    "fp32": (4, 4, True),
    "fp64": (8, 8, True),
    "shared_memory": (19, 80, False),
    "memory": (28, 1024, False),
    "constant_memory": (28, 1024, False),  # GPA: "other memory"
    # not in GPA's table: rough bounds of our own
    "special_register": (20, 50, False),   # S2R, S2UR
    "shuffle": (23, 80, False),            # SHFL (MIO like shared memory)
    "tensor": (16, 64, False),             # HMMA/IMMA/GMMA
    "barrier": (0, 0, True),               # BAR: no register result
    "control": (0, 0, True),               # branches, NOP
}

#: sm_90 class -> (lower keys, upper keys) of benchmarks/latency/latency.h100.json:
#: lower = round(min of the lower keys), upper = round(max of the upper keys).
SM90_SOURCES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "integer": (("IADD3", "LOP3"), ("IADD3", "LOP3")),
    "imad": (("IMAD",), ("IMAD",)),
    "imad_wide": (("IMAD.WIDE",), ("IMAD.WIDE",)),
    "popc": (("POPC", "FLO"), ("POPC", "FLO")),
    "predicate": (("ISETP",), ("ISETP",)),
    "conversion": (("F2F", "F2I", "I2F.F64"), ("F2F", "F2I", "I2F.F64")),
    "alu_conversion": (("I2FP",), ("I2FP",)),
    "mufu": (("MUFU.RCP", "MUFU.EX2", "MUFU.LG2", "MUFU.SIN"), ("MUFU.RCP", "MUFU.EX2", "MUFU.LG2", "MUFU.SIN")),
    "fp16": (("HFMA2",), ("HFMA2",)),
    "fp32": (("FADD", "FMUL", "FFMA"), ("FADD", "FMUL", "FFMA")),
    "fp64": (("DFMA", "DADD"), ("DFMA", "DADD")),
    "shared_memory": (("LDS",), ("LDS_conflict32",)),
    "memory": (("LDG_L1_hit",), ("LDG_DRAM",)),
    "constant_memory": (("LDC",), ("LDG_DRAM",)),
    "special_register": (("S2R", "S2UR"), ("S2R", "S2UR")),
    "shuffle": (("SHFL",), ("SHFL",)),
    "barrier": (("BAR.SYNC",), ("BAR.SYNC",)),
}

#: class -> (lower, upper, fixed) on sm_90, measured on an H100 (see SM90_SOURCES).
#: ``fixed`` follows what ptxas 13.0 does on sm_90: POPC/FLO get a scoreboard there
#: (variable), DFMA/DADD and I2FP do not (fixed). HFMA2 is the mean of ptxas's
#: alternating HFMA2 / HFMA2.MMA pipes (their stall counts are 6 and 10).
#: Not measured, kept from the default table: tensor, control.
LATENCY_SM90: dict[str, tuple[int, int, bool]] = {
    "integer": (4, 4, True),
    "imad": (4, 4, True),
    "imad_wide": (9, 9, True),
    "popc": (17, 17, False),
    "predicate": (4, 4, True),
    "conversion": (17, 19, False),
    "alu_conversion": (4, 4, True),
    "mufu": (17, 19, False),
    "fp16": (8, 8, True),
    "fp32": (4, 4, True),
    "fp64": (8, 8, True),
    "shared_memory": (23, 85, False),
    "memory": (34, 652, False),
    "constant_memory": (28, 652, False),
    "special_register": (25, 35, False),
    "shuffle": (26, 26, False),
    "tensor": LATENCY["tensor"],
    "barrier": (14, 14, True),
    "control": LATENCY["control"],
}

TABLES: dict[int, dict[str, tuple[int, int, bool]]] = {90: LATENCY_SM90}

_CLASS_OF = {}
for _names, _cls in (
    ("IMAD IMADSP IMUL UIMAD IDP", "imad"),
    ("POPC FLO BREV UPOPC UFLO UBREV", "popc"),
    ("ISETP FSETP DSETP HSETP2 PSETP PLOP3 UISETP UPLOP3 UPSETP VOTE VOTEU FCHK", "predicate"),
    ("F2F F2I I2F I2I FRND F2FP", "conversion"),
    ("I2FP", "alu_conversion"),
    ("MUFU", "mufu"),
    ("HADD2 HMUL2 HFMA2 HMNMX2 HSET2", "fp16"),
    ("FADD FMUL FFMA FMNMX FSEL FSET FSWZADD FADD32I FMUL32I FFMA32I", "fp32"),
    ("DADD DMUL DFMA DMNMX DSET", "fp64"),
    ("S2R S2UR", "special_register"),
    ("SHFL", "shuffle"),
    ("HMMA IMMA BMMA DMMA HGMMA IGMMA QGMMA BGMMA", "tensor"),
    ("BAR", "barrier"),
    ("BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC NOP WARPSYNC BREAK DEPBAR MEMBAR YIELD KILL", "control"),
):
    for _n in _names.split():
        _CLASS_OF[_n] = _cls


def latency_class(ins: Instruction) -> str:
    """The latency class of ``ins`` (the same on every architecture; the bounds differ)."""
    if ins.memory is not None:
        if ins.memory.space == "shared":
            return "shared_memory"
        return "constant_memory" if ins.memory.space == "constant" else "memory"
    base = ins.base_opcode
    if base in ("IMAD", "UIMAD") and ".WIDE" in ins.opcode:
        return "imad_wide"
    return _CLASS_OF.get(base, "integer")


def latency_table(sm: int | None = None) -> dict[str, tuple[int, int, bool]]:
    """The class table for ``sm``: measured for sm_90, GPA's Volta/Ampere bounds otherwise."""
    return TABLES.get(sm, LATENCY) if sm is not None else LATENCY


def latency(ins: Instruction, sm: int | None = None) -> tuple[int, int, bool]:
    """(lower, upper, fixed) cycles for the result of ``ins`` on ``sm`` (None: GPA's table).

    ``fixed`` is False for memory, MUFU, conversions and anything the compiler
    tracks with a write scoreboard (its control code sets a write barrier).
    """
    lo, hi, fixed = latency_table(sm)[latency_class(ins)]
    if ins.control is not None and ins.control.write_barrier is not None:
        fixed = False
    return lo, hi, fixed
