"""Just enough ELF to tell which kernels a cubin holds, with the standard library.

The collectors run on the GPU machine without pyelftools; they only need the
function symbols (name, section size) to join kernel names to cubins and to
check that a collector's PC range fits the function.
"""

from __future__ import annotations

import hashlib
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


# Sections that say nothing about what a launch of one kernel runs: line tables and debug
# information and their relocations (a comment added above a kernel moves its lines, not its
# code; a sibling kernel's change moves the debug frames), the tool notes, the symbol and
# string tables and the cubin-wide attribute and call-graph sections (they list every function,
# so a change to a sibling kernel would show there).
_NOT_CODE_PREFIXES = (".debug", ".nv_debug", ".rel.debug", ".rela.debug", ".rel.nv_debug", ".rela.nv_debug",
                      ".note", ".nv.rel.action")
_NOT_CODE = {"", ".symtab", ".strtab", ".shstrtab", ".nv.info", ".nv.callgraph", ".nv.prototype"}
# per-function sections: <prefix>.<function>
_OWNED = (".text.", ".rel.text.", ".rela.text.", ".nv.info.", ".nv.shared.", ".nv.local.")
_SHT_SYMTAB, _SHT_NOBITS, _STO_CUDA_ENTRY = 2, 8, 0x10


def _owner(name: str) -> str | None:
    """The function a per-function section belongs to (``.text.F``, ``.nv.constant0.F``...)."""
    for prefix in _OWNED:
        if name.startswith(prefix):
            return name[len(prefix):]
    if name.startswith(".nv.constant"):
        rest = name[len(".nv.constant"):]
        digits = len(rest) - len(rest.lstrip("0123456789"))
        if digits and rest[digits:digits + 1] == ".":
            return rest[digits + 1:]
    return None


def code_hash(data: bytes, function: str) -> str | None:
    """A hash of what a launch of kernel ``function`` runs: its own sections (code, relocations,
    attributes, constant banks, shared memory) and every section of the cubin that no other
    kernel owns (device functions it may call, ``__constant__`` data, globals), each with its
    name, type, flags, info (the register count) and contents. Another kernel's code, the line
    tables and debug information are left out. None when the cubin cannot be read or does not
    define ``function`` as a kernel.

    Why not the cubin's hash: the throughput cache (profile/cupti/throughput_cache.py) must not
    re-measure a kernel because its sibling in the same file changed, or a comment moved its
    lines."""
    if not is_elf(data) or len(data) < 64 or data[4] != 2 or data[5] != 1:
        return None
    try:
        e_shoff, = struct.unpack_from("<Q", data, 0x28)
        e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        heads = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
        str_off = heads[e_shstrndx][4]

        def cstr(base: int, off: int) -> str:
            return data[base + off:data.index(b"\0", base + off)].decode("utf-8", "replace")

        names = [cstr(str_off, h[0]) for h in heads]
        entries: set[str] = set()
        for name_off, stype, _f, _a, offset, size, link, _i, _al, entsize in heads:
            if stype != _SHT_SYMTAB or not entsize:
                continue
            for j in range(size // entsize):
                st_name, st_info, st_other, _shndx, _value, _size = struct.unpack_from("<IBBHQQ", data,
                                                                                       offset + j * entsize)
                if st_info & 0xF == 2 and st_other & _STO_CUDA_ENTRY:
                    entries.add(cstr(heads[link][4], st_name))
        if function not in entries:
            return None
        h = hashlib.sha256()
        for name, (_n, stype, flags, _a, offset, size, _l, info, _al, _e) in sorted(zip(names, heads)):
            if name in _NOT_CODE or name.startswith(_NOT_CODE_PREFIXES) or stype == _SHT_SYMTAB:
                continue
            owner = _owner(name)
            if owner is not None and owner != function and owner in entries:
                continue
            h.update(f"{name}|{stype}|{flags}|{info}|{size}|".encode())
            if stype != _SHT_NOBITS:
                h.update(data[offset:offset + size])
        return h.hexdigest()
    except (struct.error, ValueError, IndexError, OverflowError):
        return None
