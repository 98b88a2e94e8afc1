"""The profile: what a collector saw on the GPU, as plain immutable data.

Raw hardware reason names are kept, normalised to CUPTI's spelling without
the counter prefix: ``long_scoreboard``, ``short_scoreboard``, ``wait``,
``barrier``, ``membar``, ``warpgroup_arrive``, ``no_instructions``,
``branch_resolving``, ``lg_throttle``, ``drain``, ``tex_throttle``,
``math_pipe_throttle``, ``mio_throttle``, ``dispatch_stall``, ``imc_miss``,
``not_selected``, ``selected``, ``misc``, ``sleeping``. The GPA category of
each lives in :mod:`gpa_lsp.profile.reasons`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .throughput import Throughput


@dataclass(frozen=True)
class Device:
    name: str
    sm: int                      # 90 for sm_90
    sm_count: int
    warps_per_sm: int = 64
    schedulers_per_sm: int = 4
    clock_khz: int = 0
    driver_version: str = ""
    cuda_version: str = ""
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    shared_memory_per_sm: int = 233472     # bytes usable by blocks
    max_threads_per_block: int = 1024


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int = 0
    registers: int = 0
    static_shared: int = 0
    duration_ns: int | None = None

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


@dataclass(frozen=True)
class Kernel:
    name: str                    # mangled
    demangled: str
    cubin: str                   # sha256 of the cubin (a key into the bundle's cubins)
    cubin_crc: int | None = None # CUPTI's CRC, when the CUPTI collector saw it
    launches: tuple[Launch, ...] = ()
    throughput: Throughput | None = None  # unit utilisation (ncu Speed of Light), when measured


@dataclass(frozen=True)
class PCStats:
    """Samples at one PC. ``function`` is the section's function name (mangled kernel name)."""

    cubin: str                   # sha256
    function: str
    offset: int
    stalls: tuple[tuple[str, int], ...]       # (reason, all samples), sorted by reason
    not_issued: tuple[tuple[str, int], ...]   # (reason, not-issued samples), sorted by reason
    executed: int | None = None               # warp-level instructions executed
    thread_executed: int | None = None
    sectors: int | None = None                # L2 theoretical sectors (global)
    ideal_sectors: int | None = None
    bank_conflicts: int | None = None         # shared-memory N-way conflicts
    divergent_branches: int | None = None

    @property
    def total(self) -> int:
        return sum(n for _, n in self.stalls)

    @property
    def latency(self) -> int:
        """GPA's latency samples: samples taken while the scheduler issued nothing."""
        return sum(n for _, n in self.not_issued)

    @property
    def issued(self) -> int:
        return self.total - self.latency

    def stall_dict(self) -> dict[str, int]:
        return dict(self.stalls)

    def not_issued_dict(self) -> dict[str, int]:
        return dict(self.not_issued)


@dataclass(frozen=True)
class Profile:
    collector: str               # "cupti" | "ncu"
    device: Device
    kernels: tuple[Kernel, ...]
    pcs: tuple[PCStats, ...]
    sampling_period: int | None = None   # log2 cycles (CUPTI) when known
    dropped_samples: int = 0
    total_samples: int = 0

    def kernel(self, name: str) -> Kernel | None:
        for k in self.kernels:
            if k.name == name or k.demangled == name:
                return k
        return None

    def pcs_of(self, function: str) -> tuple[PCStats, ...]:
        return tuple(p for p in self.pcs if p.function == function)
