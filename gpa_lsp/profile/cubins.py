"""Just enough ELF to tell which kernels a cubin holds, with the standard library.

The collectors run on the GPU machine without pyelftools; they only need the
function symbols (name, section size) to join kernel names to cubins and to
check that a collector's PC range fits the function.
"""

from __future__ import annotations

import struct


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def section_names(data: bytes) -> list[str]:
    """Section names of a 64-bit little-endian ELF (a cubin); [] if unreadable."""
    if not is_elf(data) or len(data) < 64 or data[4] != 2 or data[5] != 1:
        return []
    try:
        e_shoff, = struct.unpack_from("<Q", data, 0x28)
        e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        str_off = struct.unpack_from("<Q", data, e_shoff + e_shstrndx * e_shentsize + 24)[0]
        out = []
        for i in range(e_shnum):
            name, = struct.unpack_from("<I", data, e_shoff + i * e_shentsize)
            end = data.index(b"\0", str_off + name)
            out.append(data[str_off + name:end].decode("utf-8", "replace"))
        return out
    except (struct.error, ValueError, IndexError):
        return []


def has_line_info(data: bytes) -> bool:
    """Whether a cubin carries the SASS line table (``-lineinfo`` or ``-G``) nvdisasm reads."""
    names = section_names(data)
    return ".nv_debug_line_sass" in names or ".debug_line" in names


def functions(data: bytes) -> dict[str, int]:
    """{function symbol name: size in bytes} of a 64-bit little-endian ELF (a cubin); {} if unreadable."""
    if not is_elf(data) or len(data) < 64 or data[4] != 2 or data[5] != 1:
        return {}
    try:
        e_shoff, = struct.unpack_from("<Q", data, 0x28)
        e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = []
        for i in range(e_shnum):
            off = e_shoff + i * e_shentsize
            name, stype, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, off)
            sections.append((stype, offset, size, link, entsize))
        out: dict[str, int] = {}
        for stype, offset, size, link, entsize in sections:
            if stype != 2 or not entsize:  # SHT_SYMTAB
                continue
            str_off = sections[link][1]
            for j in range(size // entsize):
                st_name, st_info, _other, _shndx, _value, st_size = struct.unpack_from("<IBBHQQ", data, offset + j * entsize)
                if st_info & 0xF != 2:  # STT_FUNC
                    continue
                end = data.index(b"\0", str_off + st_name)
                out[data[str_off + st_name:end].decode("utf-8", "replace")] = st_size
        return out
    except (struct.error, ValueError, IndexError, OverflowError):   # a damaged header: offsets past any size
        return {}


def find_cubin(name: str, cubins: dict[str, bytes]) -> str | None:
    """The key of the cubin that defines function ``name`` (first match)."""
    for key, data in cubins.items():
        if name in functions(data):
            return key
    return None
