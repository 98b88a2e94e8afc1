"""Occupancy from the cubin's resources and the device limits, with no GPU.

The same arithmetic as the CUDA occupancy calculator: blocks per SM limited by
threads, registers (allocated per warp in units of 256), shared memory
(allocated in 128-byte units, plus the 1 KB the runtime reserves per block on
sm_80+), the blocks-per-SM cap, and finally the grid: a grid with no more
blocks than SMs puts at most one block on each SM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpa_lsp.profile.model import Device, Launch
from gpa_lsp.sass.arch import arch

RESERVED_SMEM = 1024
_SM_COUNT = {70: 80, 75: 40, 80: 108, 86: 84, 89: 128, 90: 132, 100: 148, 120: 84}


def device_for(sm: int, name: str = "") -> Device:
    """A Device from the static per-SM table (gpa_lsp.sass.arch) when the bundle's has no limits."""
    a = arch(sm)
    sms = a.sm_count or _SM_COUNT.get(sm) or _SM_COUNT[max(k for k in _SM_COUNT if k <= max(sm, 70))]
    return Device(name=name or f"sm_{sm}", sm=sm, sm_count=sms, warps_per_sm=a.warps_per_sm,
                  schedulers_per_sm=a.schedulers_per_sm, max_blocks_per_sm=a.max_blocks_per_sm,
                  registers_per_sm=a.registers_per_sm, shared_memory_per_sm=a.shared_per_sm,
                  max_threads_per_block=a.max_threads_per_block)


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    active_warps: float          # per SM, the W of Eq. 6-10
    max_warps: int
    limiter: str                 # "threads" | "registers" | "shared_memory" | "blocks" | "grid"
    warps_per_block: int

    @property
    def ratio(self) -> float:
        return self.active_warps / self.max_warps if self.max_warps else 0.0


def resident_limits(device: Device, launch: Launch, *, registers: int, static_shared: int = 0) -> dict[str, int]:
    """Blocks per SM each of the block's resources allows (threads, registers, shared memory, the
    blocks-per-SM cap): what a grid large enough to fill the GPU gets, whatever this launch's grid."""
    wpb = math.ceil(max(1, launch.threads_per_block) / 32)
    limits: dict[str, int] = {"threads": device.warps_per_sm // wpb}
    regs = max(registers, launch.registers, 1)
    regs_per_warp = math.ceil(regs * 32 / 256) * 256
    limits["registers"] = (device.registers_per_sm // regs_per_warp) // wpb
    smem = static_shared + launch.dynamic_shared
    if smem > 0:
        per_block = math.ceil(smem / 128) * 128 + (RESERVED_SMEM if device.sm >= 80 else 0)
        limits["shared_memory"] = device.shared_memory_per_sm // per_block
    limits["blocks"] = device.max_blocks_per_sm
    return limits


def occupancy(device: Device, launch: Launch, *, registers: int, static_shared: int = 0) -> Occupancy:
    wpb = math.ceil(max(1, launch.threads_per_block) / 32)
    limits = resident_limits(device, launch, registers=registers, static_shared=static_shared)
    blocks_per_sm_grid = math.ceil(launch.blocks / max(1, device.sm_count))
    limits["grid"] = max(1, blocks_per_sm_grid)
    limiter = min(limits, key=lambda k: (limits[k], k != "grid"))
    blocks = int(max(0, limits[limiter]))
    # a grid that does not fill the GPU leaves SMs idle: average warps over all SMs
    warps = blocks * wpb
    if launch.blocks < device.sm_count:
        warps = wpb  # one block on the SMs that have one
    return Occupancy(blocks, float(warps), device.warps_per_sm, limiter, wpb)
