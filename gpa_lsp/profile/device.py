"""The GPU's limits, read through cuda-bindings on the GPU machine (for collectors that do not report them)."""

from __future__ import annotations

from .model import Device


def query_device(ordinal: int = 0) -> Device | None:
    """Device 0's name and limits, or None when no driver/GPU/cuda-bindings is there."""
    try:  # deferred: a machine without cuda-bindings still imports this module (None then)
        from cuda.bindings import driver as cu  # type: ignore
    except ImportError:
        try:
            from cuda import cuda as cu  # type: ignore  # older cuda-python
        except ImportError:
            return None
    try:
        if cu.cuInit(0)[0] != cu.CUresult.CUDA_SUCCESS:
            return None
        err, dev = cu.cuDeviceGet(ordinal)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        A = cu.CUdevice_attribute

        def attr(name: str) -> int:
            e, v = cu.cuDeviceGetAttribute(getattr(A, name), dev)
            return int(v) if e == cu.CUresult.CUDA_SUCCESS else 0

        _, raw = cu.cuDeviceGetName(256, dev)
        name = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
        _, drv = cu.cuDriverGetVersion()
        return Device(
            name=name,
            sm=attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR") * 10 + attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
            sm_count=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            warps_per_sm=max(1, attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR") // 32),
            clock_khz=attr("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
            driver_version=str(drv),
            cuda_version=f"{int(drv) // 1000}.{(int(drv) % 1000) // 10}",
            max_blocks_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR"),
            registers_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR"),
            shared_memory_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            max_threads_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        )
    except Exception:  # noqa: BLE001 - any driver trouble means "unknown device"
        return None
