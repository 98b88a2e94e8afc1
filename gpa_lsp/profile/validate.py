"""What a bundle may hold, checked before anything reads it: the one trust boundary for bundles.

A bundle comes from another machine (a colleague, CI, a download), so every
entry is read as hostile: the zip's declared sizes are checked *before* an
entry is inflated (a 2 MB zip bomb would otherwise unpack 2 GiB into memory),
encrypted entries and compression methods this Python cannot inflate are
refused by name, JSON may hold no NaN/Infinity and no number that is not a
finite float, and every field the analysis reads gets its type and range
checked here, once. Past this module the analysis may assume finite,
non-negative numbers of the right type. Every failure is a
:class:`BundleError` naming the entry and the field (``profile.json field
pcs[12].stalls.wait``). Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import json
import math
import zipfile
from typing import Any, Mapping

from ..errors import BundleError
from .model import Device, Kernel, Launch, PCStats, Profile
from .throughput import Throughput

SCHEMA = "gpa-bundle"
SCHEMA_VERSION = 1

# Caps, far above any real recording (the largest bundle in kernels/ has a 7 MB profile.json with
# 26k PCs, cubins of a few MB) and far below what would exhaust a laptop's memory.
MAX_ENTRIES = 10_000
MAX_MANIFEST_BYTES = 16 << 20
MAX_PROFILE_BYTES = 128 << 20
MAX_CUBIN_BYTES = 256 << 20
MAX_TOTAL_BYTES = 1 << 30              # all entries read, uncompressed
MAX_PCS = 1_000_000
MAX_KERNELS = 100_000
MAX_LAUNCHES = 1_000_000               # over all kernels
MAX_SOURCES = 100_000
MAX_COUNT = 2 ** 53                    # sample and event counts: exact in a float, no overflow when summed
MAX_QUANTITY = 1e18                    # durations (ns), bytes, hertz
_INT_DIGITS = 20                       # JSON integers longer than this are refused before int() parses them

# Python inflates these; anything else (or an encrypted entry) fails with a clear message up front
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate",
            zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}


# ---------------------------------------------------------------- zip entries

def check_archive(z: zipfile.ZipFile) -> None:
    """The whole archive: not too many entries, not too much once inflated."""
    infos = z.infolist()
    if len(infos) > MAX_ENTRIES:
        raise BundleError(f"has {len(infos)} entries, more than the {MAX_ENTRIES} a bundle may hold")


def entry(z: zipfile.ZipFile, name: str, cap: int) -> zipfile.ZipInfo:
    """The entry ``name``, checked before a byte of it is inflated: not encrypted, a method Python
    inflates, and an uncompressed size (from the zip's directory) within ``cap``."""
    info = z.getinfo(name)
    if info.flag_bits & 0x1:
        raise BundleError(f"entry {name} is encrypted; gpa reads only unencrypted bundles")
    if info.compress_type not in _METHODS:
        raise BundleError(f"entry {name} uses compression method {info.compress_type}, which gpa cannot read "
                          f"(it reads {', '.join(_METHODS.values())})")
    if info.file_size > cap:
        raise BundleError(f"entry {name} unpacks to {info.file_size:,} bytes, more than the {cap:,} allowed")
    return info


def read(z: zipfile.ZipFile, info: zipfile.ZipInfo, budget: list[int]) -> bytes:
    """The bytes of a checked entry; ``budget[0]``: bytes the bundle may still inflate (decremented).

    Reads at most the declared size plus one byte, so an entry whose header lies about its size
    cannot inflate more than it declared (zipfile then reports the CRC mismatch)."""
    if info.file_size > budget[0]:
        raise BundleError(f"unpacks to more than {MAX_TOTAL_BYTES:,} bytes in all (at entry {info.filename})")
    with z.open(info) as f:
        data = f.read(info.file_size + 1)
    if len(data) > info.file_size:
        raise BundleError(f"entry {info.filename} holds more than the {info.file_size:,} bytes it declares")
    budget[0] -= len(data)
    return data


def load_json(data: bytes, name: str) -> Any:
    """JSON with finite numbers only: ``NaN``/``Infinity``, ``1e999`` and 5000-digit integers are refused."""
    def constant(word: str) -> Any:
        raise BundleError(f"entry {name} holds {word}, which is not a number JSON allows")

    def real(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise BundleError(f"entry {name} holds the number {text[:40]}, too large for a float")
        return value

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > _INT_DIGITS:
            raise BundleError(f"entry {name} holds an integer of {len(text)} digits")
        return int(text)

    try:
        return json.loads(data, parse_constant=constant, parse_float=real, parse_int=integer)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"entry {name} is corrupt: not readable JSON ({exc})") from None
    except RecursionError:
        raise BundleError(f"entry {name} is corrupt: its JSON nests too deeply") from None


# ---------------------------------------------------------------- fields

def _got(v: Any) -> str:
    if v is _MISSING:
        return "nothing"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        return f"{v:g}" if isinstance(v, float) else (str(v) if len(str(v)) < 30 else "a huge integer")
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    return {dict: "an object", list: "a list", type(None): "null"}.get(type(v), type(v).__name__)


_MISSING = object()


class _Fields:
    """Typed reads of one JSON entry; a failure names the entry and the field's path."""

    def __init__(self, entry_name: str) -> None:
        self.entry = entry_name

    def bad(self, where: str, expected: str, value: Any) -> BundleError:
        return BundleError(f"{self.entry} field {where} is missing or wrong: expected {expected}, got {_got(value)}")

    def obj(self, v: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(v, dict):
            raise self.bad(where, "an object", v)
        return v

    def arr(self, v: Any, where: str, cap: int) -> list:
        if not isinstance(v, list):
            raise self.bad(where, "a list", v)
        if len(v) > cap:
            raise BundleError(f"{self.entry} field {where} has {len(v):,} items, more than the {cap:,} allowed")
        return v

    def text(self, v: Any, where: str) -> str:
        # a NUL makes every later use as a path (exists, open) raise ValueError
        if not isinstance(v, str) or "\0" in v:
            raise self.bad(where, "a string", v)
        return v

    def count(self, v: Any, where: str, lo: int = 0, hi: int = MAX_COUNT) -> int:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise self.bad(where, f"an integer from {lo} to {hi:,}", v)
        return v

    def number(self, v: Any, where: str, lo: float = 0.0, hi: float = MAX_QUANTITY) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            raise self.bad(where, f"a number from {lo:g} to {hi:g}", v)
        return v

    def get(self, d: Mapping[str, Any], key: str, where: str) -> Any:
        """A required key."""
        if key not in d:
            raise self.bad(f"{where}.{key}" if where else key, "a value", _MISSING)
        return d[key]

    def counts(self, v: Any, where: str) -> tuple[tuple[str, int], ...]:
        """{reason: samples} -> sorted pairs."""
        d = self.obj(v, where)
        return tuple(sorted((self.text(k, where), self.count(n, f"{where}.{k}")) for k, n in d.items()))


# ---------------------------------------------------------------- manifest

def manifest(d: Any, name: str = "manifest.json") -> dict:
    """The checked manifest (returned as is). Schema and version errors say what to do."""
    f = _Fields(name)
    d = f.obj(d, "(top level)")
    if d.get("schema") != SCHEMA:
        raise BundleError(f"is not a gpa bundle (schema {_got(d.get('schema', _MISSING))})")
    version = d.get("schema_version")
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION
        raise BundleError(f"has bundle schema version {_got(version) if not isinstance(version, int) else version}, "
                          f"this gpa-lsp reads version {SCHEMA_VERSION}", "upgrade gpa-lsp" if newer else "")
    for i, src in enumerate(f.arr(d.get("sources", []), "sources", MAX_SOURCES)):
        where = f"sources[{i}]"
        src = f.obj(src, where)
        f.text(f.get(src, "path", where), f"{where}.path")
        for key in ("abspath", "sha256"):
            if src.get(key) is not None:
                f.text(src[key], f"{where}.{key}")
    if d.get("cubins") is not None:
        f.obj(d["cubins"], "cubins")
    return d


# ---------------------------------------------------------------- profile

_DEVICE_RANGES = {      # field -> (lo, hi); ints. A zero where the arithmetic divides is refused.
    "sm": (0, 1000), "sm_count": (0, 100_000), "warps_per_sm": (1, 4096), "schedulers_per_sm": (1, 256),
    "clock_khz": (0, 10 ** 9), "max_blocks_per_sm": (1, 4096), "registers_per_sm": (1, 1 << 30),
    "shared_memory_per_sm": (0, 1 << 40), "max_threads_per_block": (1, 1 << 20),
}
_PC_COUNTERS = ("executed", "thread_executed", "sectors", "ideal_sectors", "bank_conflicts", "divergent_branches")


def profile(d: Any, name: str = "profile.json") -> Profile:
    """A checked profile.json -> :class:`Profile` (the one place the JSON is turned into the model)."""
    f = _Fields(name)
    d = f.obj(d, "(top level)")
    dev = f.obj(f.get(d, "device", ""), "device")
    values: dict[str, Any] = {"name": f.text(f.get(dev, "name", "device"), "device.name")}
    for key in ("driver_version", "cuda_version"):
        if key in dev:
            values[key] = f.text(dev[key], f"device.{key}")
    for key, (lo, hi) in _DEVICE_RANGES.items():
        if key in dev or key in ("sm", "sm_count"):
            values[key] = f.count(f.get(dev, key, "device"), f"device.{key}", lo, hi)
    device = Device(**values)

    launches_left = MAX_LAUNCHES
    kernels = []
    for i, k in enumerate(f.arr(f.get(d, "kernels", ""), "kernels", MAX_KERNELS)):
        where = f"kernels[{i}]"
        k = f.obj(k, where)
        kname = f.text(f.get(k, "name", where), f"{where}.name")
        crc = k.get("cubin_crc")
        launch_list = f.arr(k.get("launches", []), f"{where}.launches", launches_left)
        launches_left -= len(launch_list)
        kernels.append(Kernel(
            name=kname, demangled=f.text(k.get("demangled", kname), f"{where}.demangled"),
            cubin=f.text(f.get(k, "cubin", where), f"{where}.cubin"),
            cubin_crc=None if crc is None else f.count(crc, f"{where}.cubin_crc", 0, 2 ** 64 - 1),
            launches=tuple(_launch(f, l, f"{where}.launches[{j}]") for j, l in enumerate(launch_list)),
            throughput=_throughput(f, k["throughput"], f"{where}.throughput") if k.get("throughput") else None))

    pcs = []
    for i, s in enumerate(f.arr(f.get(d, "pcs", ""), "pcs", MAX_PCS)):
        where = f"pcs[{i}]"
        s = f.obj(s, where)
        extra = {key: (None if s.get(key) is None else f.count(s[key], f"{where}.{key}")) for key in _PC_COUNTERS}
        pcs.append(PCStats(
            cubin=f.text(f.get(s, "cubin", where), f"{where}.cubin"),
            function=f.text(f.get(s, "function", where), f"{where}.function"),
            offset=f.count(f.get(s, "offset", where), f"{where}.offset", 0, 1 << 40),
            stalls=f.counts(s.get("stalls", {}), f"{where}.stalls"),
            not_issued=f.counts(s.get("not_issued", {}), f"{where}.not_issued"), **extra))

    period = d.get("sampling_period")
    return Profile(collector=f.text(f.get(d, "collector", ""), "collector"), device=device, kernels=tuple(kernels),
                   pcs=tuple(pcs), sampling_period=None if period is None else f.count(period, "sampling_period", 0, 63),
                   dropped_samples=f.count(d.get("dropped_samples", 0), "dropped_samples"),
                   total_samples=f.count(d.get("total_samples", 0), "total_samples"))


def _dims(f: _Fields, v: Any, where: str, hi: int) -> tuple[int, int, int]:
    dims = f.arr(v, where, 3)
    if len(dims) != 3:
        raise f.bad(where, "a list of 3 sizes", v)
    return tuple(f.count(x, f"{where}[{n}]", 1, hi) for n, x in enumerate(dims))  # type: ignore[return-value]


def _launch(f: _Fields, l: Any, where: str) -> Launch:
    l = f.obj(l, where)
    duration = l.get("duration_ns")
    return Launch(grid=_dims(f, f.get(l, "grid", where), f"{where}.grid", 2 ** 31 - 1),
                  block=_dims(f, f.get(l, "block", where), f"{where}.block", 1024),
                  dynamic_shared=f.count(l.get("dynamic_shared", 0), f"{where}.dynamic_shared", 0, 1 << 32),
                  registers=f.count(l.get("registers", 0), f"{where}.registers", 0, 1 << 16),
                  static_shared=f.count(l.get("static_shared", 0), f"{where}.static_shared", 0, 1 << 32),
                  duration_ns=None if duration is None else f.number(duration, f"{where}.duration_ns"))


def _throughput(f: _Fields, t: Any, where: str) -> Throughput:
    t = f.obj(t, where)
    units = f.obj(t.get("units", {}), f"{where}.units")

    def optional(key: str) -> float | None:
        return None if t.get(key) is None else f.number(t[key], f"{where}.{key}")

    # a share of a unit's sustained peak: ncu reports a little over 100 at most; 1000 is nonsense
    return Throughput(units=tuple(sorted((f.text(u, f"{where}.units"), float(f.number(p, f"{where}.units.{u}", 0.0, 1000.0)))
                                         for u, p in units.items())),
                      duration_ns=optional("duration_ns"), dram_bytes=optional("dram_bytes"),
                      clock_hz=optional("clock_hz"), launches=f.count(t.get("launches", 1), f"{where}.launches"),
                      clocks=f.text(t.get("clocks", "none"), f"{where}.clocks"))
