"""Is there an NVIDIA GPU this process can use? The one home of that question: checked before a
harness runs (``gpa profile``, the language server's collection), by ``gpa doctor``, and, the
cheap way (:func:`gpu_present`), by the language server and ``gpa verify``.

Three cheap looks, no CUDA context: the device nodes (``/dev/nvidia0``, ... or WSL's
``/dev/dxg``), the driver library (``libcuda.so.1`` through ctypes), and, when both are there,
``cuInit`` and ``cuDeviceGetCount`` (which catch a driver too old for the toolkit: "CUDA driver
version is insufficient"). ``GPA_SKIP_GPU_CHECK=1`` skips the check (a harness that fakes the GPU).
Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfilingError
from ..user_cache import collector_cache_dir
from .cupti.json_store import read_entries, write_entries

LIBCUDA_NAMES = ("libcuda.so.1", "libcuda.so")


@dataclass(frozen=True)
class DriverStatus:
    device_nodes: tuple[str, ...]     # /dev/nvidia0 ... (or /dev/dxg under WSL)
    libcuda: str | None               # the driver library that loaded, None when none did
    load_error: str = ""              # why it did not
    driver_version: int | None = None  # cuDriverGetVersion: 13000 = CUDA 13.0
    init_error: str | None = None     # cuInit's error name when it failed
    device_count: int | None = None

    @property
    def driver_cuda(self) -> str | None:
        v = self.driver_version
        return f"{v // 1000}.{(v % 1000) // 10}" if v else None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def problem(self) -> str | None:
        """What stops a CUDA program here, in words; None when nothing does."""
        if self.libcuda is None and not self.device_nodes:
            return "no NVIDIA driver and no NVIDIA device on this machine (no /dev/nvidia*, no libcuda.so.1)"
        if self.libcuda is None:
            return "the NVIDIA driver library libcuda.so.1 cannot be loaded" + \
                (f" ({self.load_error})" if self.load_error else "")
        if not self.device_nodes and self.init_error is None and not self.device_count:
            return "the NVIDIA driver library is installed but there is no NVIDIA device (no /dev/nvidia*)"
        if self.init_error is not None:
            what = {"CUDA_ERROR_INSUFFICIENT_DRIVER": "the NVIDIA driver is too old for this CUDA "
                    f"(driver supports CUDA {self.driver_cuda or '?'})",
                    "CUDA_ERROR_NO_DEVICE": "the NVIDIA driver sees no CUDA device",
                    "CUDA_ERROR_STUB_LIBRARY": "libcuda.so.1 is the toolkit's stub, not a driver"}
            return what.get(self.init_error, "the NVIDIA driver failed to start") + f" (cuInit: {self.init_error})"
        if self.device_count == 0:
            return "the NVIDIA driver sees no CUDA device"
        return None

    @property
    def hint(self) -> str:
        if self.libcuda is None or (self.init_error or "").endswith("STUB_LIBRARY"):
            return ("run gpa profile on a machine with an NVIDIA GPU and its driver (in a container: "
                    "--gpus all); without one, `gpa advise` replays a recorded bundle "
                    "([profile] bundle in gpa.toml)")
        if self.init_error == "CUDA_ERROR_INSUFFICIENT_DRIVER":
            return "update the NVIDIA driver, or build with a CUDA toolkit the driver supports"
        return "check `nvidia-smi`; without a GPU, `gpa advise` replays a recorded bundle ([profile] bundle)"


def gpu_present() -> bool:
    """Is there an NVIDIA GPU here, the cheap look: its device nodes, no driver call (safe on an
    event loop, and in a process that must not load libcuda). The language server uses it to choose
    between profiling and replaying, ``gpa verify`` whether to time fixes; before a harness runs,
    :func:`require_gpu` asks the driver too."""
    return bool(_device_nodes())


def _device_nodes() -> tuple[str, ...]:
    return tuple(sorted(glob.glob("/dev/nvidia[0-9]*"))) + (("/dev/dxg",) if os.path.exists("/dev/dxg") else ())


def _load_libcuda() -> tuple[ctypes.CDLL | None, str | None, str]:
    err = ""
    for name in LIBCUDA_NAMES:
        try:
            return ctypes.CDLL(name), name, ""
        except OSError as exc:
            err = err or str(exc)
    return None, None, err


# the CUresult codes the messages above tell apart (cuda.h), should cuGetErrorName be missing
_KNOWN = {34: "CUDA_ERROR_STUB_LIBRARY", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 100: "CUDA_ERROR_NO_DEVICE"}


def _error_name(lib, rc: int) -> str:
    name = ctypes.c_char_p()
    try:
        fn = lib.cuGetErrorName
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        if fn(rc, ctypes.byref(name)) == 0 and name.value:
            return name.value.decode()
    except AttributeError:
        pass
    return _KNOWN.get(rc, f"CUDA error {rc}")


def driver_status(*, init: bool = True) -> DriverStatus:
    """Device nodes, driver library and (``init``) whether the driver starts and counts devices."""
    nodes = _device_nodes()
    lib, name, err = _load_libcuda()
    if lib is None:
        return DriverStatus(nodes, None, err)
    version = ctypes.c_int(0)
    try:
        drv = lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value or None
    except AttributeError:
        drv = None
    if not init:
        return DriverStatus(nodes, name, "", drv)
    try:
        rc = lib.cuInit(ctypes.c_uint(0))
        if rc != 0:
            return DriverStatus(nodes, name, "", drv, _error_name(lib, rc))
        count = ctypes.c_int(0)
        rc = lib.cuDeviceGetCount(ctypes.byref(count))
        if rc != 0:
            return DriverStatus(nodes, name, "", drv, _error_name(lib, rc))
    except AttributeError as exc:       # a library named libcuda that is not one
        return DriverStatus(nodes, None, f"{name} has no {exc}")
    return DriverStatus(nodes, name, "", drv, None, count.value)


def require_gpu(collector: str) -> None:
    """Raise a clear :class:`ProfilingError` when no CUDA program can run here (before the harness).

    ``cuInit`` costs gpa's process about 0.1 s on the H100 (a tenth of a profile that reuses its
    unit throughput), so a driver that passed is remembered (:func:`_driver_key`: boot, driver
    library file, driver version, device nodes, visible devices) and the next check, when all of
    those are the same, loads the library and reads its version without starting it. Anything
    new (no entry, another driver, a device node gone) takes the whole check, and a failure is
    never remembered."""
    if os.environ.get("GPA_SKIP_GPU_CHECK", "") not in ("", "0"):
        return
    quick = driver_status(init=False)
    key = _driver_key(quick)
    if key is not None and key in _passed():
        return
    st = driver_status()
    if st.problem is not None:
        raise ProfilingError(f"cannot profile with {collector}: {st.problem}; the harness was not run", st.hint)
    if key is not None:
        _remember_passed(key)


def explain_failure(collector: str) -> ProfilingError | None:
    """After a collection failed: the whole check again (a remembered pass may be stale: the GPU
    fell off the bus, the driver broke without a change to its files). The clear error when it
    finds a problem, and the pass is forgotten; None when the driver is fine."""
    if os.environ.get("GPA_SKIP_GPU_CHECK", "") not in ("", "0"):
        return None
    st = driver_status()
    if st.problem is None:
        return None
    try:
        os.remove(_passed_path())
    except OSError:
        pass
    return ProfilingError(f"cannot profile with {collector}: {st.problem}", st.hint)


PASSED_FILE = "driver-check.json"
_PASSED_KEPT = 8


def _passed_path() -> str:
    return str(collector_cache_dir() / PASSED_FILE)


def _loaded_path(name: str) -> str:
    """Where the loaded driver library lives (this process's mappings), else its name."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(" ", 5)[-1].strip()
                if os.path.basename(path).startswith("libcuda.so"):
                    return path
    except OSError:
        pass
    return name


def _driver_key(st: DriverStatus) -> str | None:
    """What a passed check depends on; None when the cheap look already finds a problem."""
    if st.libcuda is None or not st.device_nodes or not st.driver_version:
        return None
    path = _loaded_path(st.libcuda)
    try:
        info = os.stat(path)
        stamp = [info.st_size, info.st_mtime_ns]
    except OSError:
        stamp = None
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = None
    doc = {"boot": boot, "lib": path, "stamp": stamp, "version": st.driver_version, "nodes": list(st.device_nodes),
           "visible": [os.environ.get(v) for v in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:24]


def _passed() -> dict:
    """Driver keys that passed the full check (key -> when), oldest first."""
    return read_entries(Path(_passed_path()))


def _remember_passed(key: str) -> None:
    keys = _passed()
    keys.pop(key, None)
    keys[key] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_entries(Path(_passed_path()), keys, _PASSED_KEPT)

