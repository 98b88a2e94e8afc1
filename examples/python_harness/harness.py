"""A harness that is a Python program: it loads its kernels at run time with cuda-bindings.

* ``poly_double`` from ``build/poly.cubin``, which gpa's [build] compiles with nvcc (``-cubin``,
  ``-lineinfo`` added by gpa), loaded with ``cuModuleLoadData``;
* ``fir_bank`` from ``src/fir.cu``, compiled here by NVRTC into a cubin that exists only in this
  process's memory, loaded with ``cuModuleLoadData`` too.

This is how programs that use CuPy's RawModule, Numba or their own NVRTC calls bring their kernels.
gpa profiles it unchanged: the CUPTI collector saves every module the driver loads, and the
NVRTC program is named by its source's path so the line table leads back to ``src/fir.cu``.
Each kernel runs ``LAUNCHES`` times; the results are checked on the host and the exit code is 0
only when they are right. Needs cuda-bindings (``cuda.bindings.driver``, ``cuda.bindings.nvrtc``)
and NVRTC (the CUDA toolkit's, or the nvidia-cuda-nvrtc wheel).
"""

from __future__ import annotations

import array
import ctypes
import sys
from pathlib import Path

from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

HERE = Path(__file__).resolve().parent
POLY_CUBIN = HERE / "build" / "poly.cubin"
FIR_SOURCE = HERE / "src" / "fir.cu"
LAUNCHES = 20
POLY_N, POLY_STEPS = 1 << 22, 64
FIR_N, TAPS = 1 << 24, 9


def ok(result):
    """The value of a cuda-bindings call's (status, value...) tuple; raises on a failed status."""
    status, *rest = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        raise RuntimeError(f"CUDA call failed: {status!r}")
    return rest[0] if len(rest) == 1 else tuple(rest) if rest else None


def compile_nvrtc(source: Path, arch: str) -> bytes:
    """``source`` compiled by NVRTC into a cubin for ``arch`` with line information."""
    prog = ok(nvrtc.nvrtcCreateProgram(source.read_bytes(), str(source).encode(), 0, [], []))
    opts = [f"--gpu-architecture={arch}".encode(), b"--generate-line-info", b"--std=c++17"]
    try:
        status, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(status) != 0:
            size = ok(nvrtc.nvrtcGetProgramLogSize(prog))
            log = b" " * size
            ok(nvrtc.nvrtcGetProgramLog(prog, log))
            raise RuntimeError(f"NVRTC could not compile {source.name}:\n{log.decode(errors='replace')}")
        size = ok(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = b" " * size
        ok(nvrtc.nvrtcGetCUBIN(prog, cubin))
        return cubin
    finally:
        ok(nvrtc.nvrtcDestroyProgram(prog))


def to_device(values: array.array) -> cu.CUdeviceptr:
    nbytes = len(values) * values.itemsize
    ptr = ok(cu.cuMemAlloc(nbytes))
    addr, _ = values.buffer_info()
    ok(cu.cuMemcpyHtoD(ptr, addr, nbytes))
    return ptr


def from_device(ptr: cu.CUdeviceptr, n: int) -> array.array:
    out = array.array("f", bytes(4 * n))
    addr, _ = out.buffer_info()
    ok(cu.cuMemcpyDtoH(addr, ptr, 4 * n))
    return out


def launch(func, grid: int, block: int, *args) -> None:
    """cuLaunchKernel with ``args`` as the kernel's parameters (device pointers and ints)."""
    holders = [ctypes.c_uint64(int(a)) if isinstance(a, cu.CUdeviceptr) else ctypes.c_int(a) for a in args]
    params = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    ok(cu.cuLaunchKernel(func, grid, 1, 1, block, 1, 1, 0, 0, ctypes.addressof(params), 0))


def f32(x: float) -> float:
    return array.array("f", [x])[0]


def main() -> int:
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    major = ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))

    poly = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData(POLY_CUBIN.read_bytes())), b"poly_double"))
    fir_cubin = compile_nvrtc(FIR_SOURCE, f"sm_{major}{minor}")
    fir = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData(fir_cubin)), b"fir_bank"))

    x = array.array("f", (i / 1000.0 for i in range(1000))) * (POLY_N // 1000 + 1)
    taps = array.array("f", (1.0 / (t + 1) for t in range(TAPS)))
    signal = array.array("f", (i / 17.0 - 0.5 for i in range(17))) * ((FIR_N + TAPS) // 17 + 1)
    dx, dy = to_device(x), ok(cu.cuMemAlloc(4 * POLY_N))
    din, dtaps, dout = to_device(signal), to_device(taps), ok(cu.cuMemAlloc(4 * FIR_N))
    block = 256
    for _ in range(LAUNCHES):
        launch(poly, (POLY_N + block - 1) // block, block, dx, dy, POLY_N, POLY_STEPS)
        launch(fir, (FIR_N // 4 + block - 1) // block, block, dout, din, dtaps, FIR_N)
    ok(cu.cuCtxSynchronize())

    y, out = from_device(dy, POLY_N), from_device(dout, FIR_N)
    bad = 0
    for i in range(0, POLY_N, 4099):
        v = x[i]
        for _ in range(POLY_STEPS):
            v = f32(v * 0.5 + 0.25)
        bad += abs(y[i] - v) > 1e-6
    for i in range(0, FIR_N, 4099):
        ref = sum(signal[i + t] * taps[t] for t in range(TAPS))
        bad += abs(out[i] - ref) > 1e-4
    for p in (dx, dy, din, dtaps, dout):
        ok(cu.cuMemFree(p))
    ok(cu.cuDevicePrimaryCtxRelease(dev))
    print(f"poly_double and fir_bank, {LAUNCHES} launches each: {'ok' if not bad else f'{bad} wrong values'}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
