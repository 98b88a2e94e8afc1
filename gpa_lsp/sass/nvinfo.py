"""Decode ``.nv.info`` / ``.nv.info.<kernel>`` attribute records.

Each record is ``u8 format, u8 attribute, u16 value-or-size`` followed by a
payload of that size when format is EIFMT_SVAL (4). Per-symbol records in
``.nv.info`` start their payload with the symbol index (u32).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

EIFMT_SVAL = 4

# attribute codes (as cuobjdump -elf names them)
EIATTR_MAX_THREADS = 0x05
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_EXIT_INSTR_OFFSETS = 0x1C
EIATTR_CRS_STACK_SIZE = 0x1E
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C


@dataclass
class Record:
    fmt: int
    attr: int
    value: int          # the u16 for non-SVAL records, the payload size for SVAL
    payload: bytes = b""


@dataclass
class FunctionInfo:
    """Attributes collected for one symbol (kernel or device function)."""

    registers: int = 0
    frame_size: int = 0
    stack_size: int = 0
    max_threads: int | None = None
    barriers: int = 0
    exit_offsets: tuple[int, ...] = ()
    extra: dict[int, bytes] = field(default_factory=dict)


def records(data: bytes) -> list[Record]:
    out: list[Record] = []
    i, n = 0, len(data)
    while i + 4 <= n:
        fmt, attr, value = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
        i += 4
        if fmt == EIFMT_SVAL:
            out.append(Record(fmt, attr, value, bytes(data[i:i + value])))
            i += value
        else:
            out.append(Record(fmt, attr, value))
    return out


def apply_global(data: bytes, by_symbol: dict[int, FunctionInfo]) -> None:
    """``.nv.info``: per-symbol REGCOUNT / FRAME_SIZE / MIN_STACK_SIZE (payload: u32 sym, u32 value)."""
    for rec in records(data):
        if rec.fmt != EIFMT_SVAL or len(rec.payload) < 8:
            continue
        sym, val = struct.unpack_from("<II", rec.payload)
        info = by_symbol.setdefault(sym, FunctionInfo())
        if rec.attr == EIATTR_REGCOUNT:
            info.registers = val
        elif rec.attr == EIATTR_FRAME_SIZE:
            info.frame_size = val
        elif rec.attr == EIATTR_MIN_STACK_SIZE:
            info.stack_size = val


def apply_kernel(data: bytes, info: FunctionInfo) -> None:
    """``.nv.info.<kernel>``: MAX_THREADS (x,y,z), NUM_BARRIERS, EXIT_INSTR_OFFSETS..."""
    for rec in records(data):
        if rec.attr == EIATTR_MAX_THREADS and len(rec.payload) >= 12:
            x, y, z = struct.unpack_from("<III", rec.payload)
            info.max_threads = x * y * z
        elif rec.attr == EIATTR_NUM_BARRIERS:
            info.barriers = rec.value if rec.fmt != EIFMT_SVAL else (
                struct.unpack_from("<I", rec.payload)[0] if len(rec.payload) >= 4 else 0)
        elif rec.attr == EIATTR_EXIT_INSTR_OFFSETS and rec.fmt == EIFMT_SVAL:
            info.exit_offsets = tuple(struct.unpack_from(f"<{len(rec.payload) // 4}I", rec.payload))
        elif rec.fmt == EIFMT_SVAL:
            info.extra[rec.attr] = rec.payload
