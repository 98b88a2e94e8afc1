"""Read a cubin's ELF: functions, their sections and offsets, .nv.info attributes, shared memory, SM.

How CUDA 13 places a ``__noinline__`` device function (checked with nvcc 13.0
for sm_80/sm_90/sm_100, whole-program mode): it gets *no section of its own*.
ptxas copies it into every kernel section that calls it, as a LOCAL STT_FUNC
symbol named ``$<kernel>$<callee>`` whose value is its offset inside the
kernel's ``.text.<kernel>`` section. The kernel's own symbol still covers the
whole section, so a function's extent is computed here as "up to the next
function symbol in the same section" (or the section end). With separate
compilation (-rdc) a device function can also have its own ``.text.<name>``
section; both layouts give ``(section, start)`` pairs that locate the code.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

from ..errors import CubinError
from . import nvinfo

EM_CUDA = 190
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10
SHT_NOBITS = 8
SHF_COMPRESSED = 0x800
_ELF_MAGIC = b"\x7fELF"


@dataclass
class ElfFunction:
    name: str
    section: str
    entry: bool
    start: int
    size: int
    info: nvinfo.FunctionInfo
    shared_static: int = 0


@dataclass
class CubinImage:
    sm: int
    functions: list[ElfFunction]
    text: dict[str, bytes] = field(default_factory=dict)   # section name -> code bytes


def sm_from_flags(e_flags: int) -> int:
    """SM version from ``e_flags`` bits 8..15 (0x5a = sm_90; same place for sm_75..sm_120)."""
    return (e_flags >> 8) & 0xFF


def _check_layout(data: bytes, what: str) -> None:
    if len(data) < 64 or data[:4] != _ELF_MAGIC:
        raise CubinError(f"{what} is not a cubin: no ELF header",
                         "pass a .cubin built with `nvcc -cubin -lineinfo`, or an executable to load_programs")
    if data[4] != 2:
        raise CubinError(f"{what} is a 32-bit ELF, not a cubin", "pass a 64-bit CUDA cubin")
    e_machine = struct.unpack_from("<H", data, 18)[0]
    if e_machine != EM_CUDA:
        raise CubinError(f"{what} is an ELF for machine {e_machine}, not a CUDA cubin",
                         "for a host executable use load_programs / `gpa disasm` (it extracts the cubins)")
    e_shoff = struct.unpack_from("<Q", data, 40)[0]
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 58)
    if e_shoff + e_shentsize * e_shnum > len(data):
        raise CubinError(f"{what} is truncated: section headers end at byte {e_shoff + e_shentsize * e_shnum}, "
                         f"the file has {len(data)}", "rebuild the cubin; the file was cut short")
    for k in range(e_shnum):
        base = e_shoff + k * e_shentsize
        sh_type, sh_flags = struct.unpack_from("<IQ", data, base + 4)
        sh_offset, sh_size = struct.unpack_from("<QQ", data, base + 24)
        if sh_type != SHT_NOBITS and sh_offset + sh_size > len(data):
            raise CubinError(f"{what} is truncated: section {k} ends at byte {sh_offset + sh_size}, "
                             f"the file has {len(data)}", "rebuild the cubin; the file was cut short")
        if sh_type != SHT_NOBITS and sh_flags & SHF_COMPRESSED:
            # ptxas never compresses a section; inflating one would trust a size from the file (issue 16)
            raise CubinError(f"{what} is damaged: section {k} is marked compressed, which no cubin is",
                             "rebuild the cubin")


def is_cubin(data: bytes) -> bool:
    return len(data) >= 20 and data[:4] == _ELF_MAGIC and struct.unpack_from("<H", data, 18)[0] == EM_CUDA


def read_cubin(data: bytes, what: str = "input") -> CubinImage:
    """The functions, code and attributes of a cubin; :class:`CubinError` for anything unreadable.

    The cubin may come from a bundle recorded elsewhere, so any damage pyelftools or the
    ``.nv.info`` parser trips over (a flipped byte in a section header) is that clean error."""
    from elftools.common.exceptions import ELFError  # deferred: pyelftools takes ~50 ms; only reading a cubin needs it
    _check_layout(data, what)
    try:
        return _read_cubin(data, what)
    except (ELFError, struct.error, ValueError, IndexError, KeyError, OverflowError, UnicodeError) as exc:
        raise CubinError(f"{what} is not a readable cubin: {exc}", "rebuild the cubin") from None


def _read_cubin(data: bytes, what: str) -> CubinImage:
    from elftools.elf.elffile import ELFFile  # deferred: see read_cubin
    elf = ELFFile(io.BytesIO(data))
    sections = list(elf.iter_sections())
    sm = sm_from_flags(elf["e_flags"])

    by_index = {i: s for i, s in enumerate(sections)}
    symtab = next((s for s in sections if s["sh_type"] == "SHT_SYMTAB"), None)
    if symtab is None:
        raise CubinError(f"{what} has no symbol table", "rebuild the cubin without stripping it")
    strtab = by_index[symtab["sh_link"]].data()
    raw = symtab.data()

    def cstr(off: int) -> str:
        end = strtab.find(b"\0", off)
        return strtab[off:end if end >= 0 else None].decode("utf-8", "replace")

    funcs: list[tuple[int, int, str, bool, int, int]] = []  # (shndx, value, name, entry, size, symidx)
    for k in range(len(raw) // 24):
        st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", raw, 24 * k)
        if st_info & 0xF != STT_FUNC or st_shndx == 0 or st_shndx >= len(sections):
            continue
        sec = by_index[st_shndx]
        if not sec.name.startswith(".text."):
            continue
        funcs.append((st_shndx, st_value, cstr(st_name), bool(st_other & STO_CUDA_ENTRY), st_size, k))

    infos: dict[int, nvinfo.FunctionInfo] = {}
    for s in sections:
        if s.name == ".nv.info":
            nvinfo.apply_global(s.data(), infos)
    kernel_info_by_section: dict[int, bytes] = {}
    shared_by_section: dict[int, int] = {}
    for s in sections:
        if s.name.startswith(".nv.info."):
            kernel_info_by_section[s["sh_info"]] = s.data()
        elif s.name.startswith(".nv.shared.") and s["sh_info"]:
            shared_by_section[s["sh_info"]] = s["sh_size"]
    # .nv.shared.<kernel> may lack sh_info on some versions: match by name as a fallback
    shared_by_name = {s.name[len(".nv.shared."):]: s["sh_size"] for s in sections if s.name.startswith(".nv.shared.")}

    functions: list[ElfFunction] = []
    text: dict[str, bytes] = {}
    funcs.sort()
    for i, (shndx, value, name, entry, _size, symidx) in enumerate(funcs):
        sec = by_index[shndx]
        sec_size = sec["sh_size"]
        nxt = funcs[i + 1] if i + 1 < len(funcs) else None
        end = nxt[1] if nxt is not None and nxt[0] == shndx else sec_size
        if sec.name not in text:
            text[sec.name] = sec.data()
        info = infos.get(symidx, nvinfo.FunctionInfo())
        kinfo = kernel_info_by_section.get(shndx)
        if kinfo is not None and value == 0:
            nvinfo.apply_kernel(kinfo, info)
        shared = 0
        if value == 0:
            shared = shared_by_section.get(shndx, shared_by_name.get(sec.name[len(".text."):], 0))
        functions.append(ElfFunction(name=name, section=sec.name, entry=entry, start=value,
                                     size=end - value, info=info, shared_static=shared))
    return CubinImage(sm=sm, functions=functions, text=text)
