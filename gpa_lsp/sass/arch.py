"""Per-architecture limits (occupancy inputs) and instruction latency classes.

Limits are the CUDA Programming Guide's per-compute-capability table.
:func:`from_device` replaces them with what the driver reports when a GPU and
cuda-python are present (imported lazily: no GPU must be fine).

Latencies are GPA's Volta/Ampere bounds (gpa-method.md), applied to every
architecture here; Hopper/Blackwell values are *not* measured. Classes not
in GPA's table (S2R, SHFL, tensor-core MMA) carry our own rough bounds and
say so. Whether a def is variable-latency is decided by the hardware's own
rule when the control code is known: the compiler gives a result a write
scoreboard exactly when its latency is not fixed.
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
    try:
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

#: class -> (lower, upper, fixed)
LATENCY: dict[str, tuple[int, int, bool]] = {
    "integer": (4, 4, True),
    "imad": (5, 5, True),
    "popc": (10, 10, True),
    "predicate": (5, 5, True),
    "conversion": (14, 14, False),
    "mufu": (14, 14, False),
    "fp16": (6, 6, True),
    "fp32": (4, 4, True),
    "fp64": (8, 8, True),
    "shared_memory": (19, 80, False),
    "memory": (28, 1024, False),
    # not in GPA's table: rough bounds of our own
    "special_register": (20, 50, False),   # S2R
    "shuffle": (23, 80, False),            # SHFL (MIO like shared memory)
    "tensor": (16, 64, False),             # HMMA/IMMA/GMMA
    "control": (0, 0, True),               # branches, barriers, NOP
}

_CLASS_OF = {}
for _names, _cls in (
    ("IMAD IMADSP IMUL UIMAD IDP", "imad"),
    ("POPC FLO BREV UPOPC UFLO UBREV", "popc"),
    ("ISETP FSETP DSETP HSETP2 PSETP PLOP3 UISETP UPLOP3 UPSETP VOTE VOTEU FCHK", "predicate"),
    ("F2F F2I I2F I2I FRND F2FP", "conversion"),
    ("MUFU", "mufu"),
    ("HADD2 HMUL2 HFMA2 HMNMX2 HSET2", "fp16"),
    ("FADD FMUL FFMA FMNMX FSEL FSET FSWZADD FADD32I FMUL32I FFMA32I", "fp32"),
    ("DADD DMUL DFMA DMNMX DSET", "fp64"),
    ("S2R S2UR", "special_register"),
    ("SHFL", "shuffle"),
    ("HMMA IMMA BMMA DMMA HGMMA IGMMA QGMMA BGMMA", "tensor"),
    ("BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC BAR NOP WARPSYNC BREAK DEPBAR MEMBAR YIELD KILL", "control"),
):
    for _n in _names.split():
        _CLASS_OF[_n] = _cls


def latency_class(ins: Instruction) -> str:
    if ins.memory is not None:
        return "shared_memory" if ins.memory.space == "shared" else "memory"
    return _CLASS_OF.get(ins.base_opcode, "integer")


def latency(ins: Instruction) -> tuple[int, int, bool]:
    """(lower, upper, fixed) cycles for the result of ``ins``.

    ``fixed`` is False for memory, MUFU, conversions and anything the compiler
    tracks with a write scoreboard (its control code sets a write barrier).
    """
    lo, hi, fixed = LATENCY[latency_class(ins)]
    if ins.control is not None and ins.control.write_barrier is not None:
        fixed = False
    return lo, hi, fixed
