"""Control codes of Volta..Blackwell instructions, decoded from the ELF bytes.

Each 128-bit instruction keeps its scheduling information in bits 105..127:
``ctrl = hi64 >> 41`` with stall (4 bits), yield (1), write barrier (3), read
barrier (3), wait mask (6), reuse (4). A barrier value of 7 means "none".
The yield bit is stored inverted (CuAssembler prints "Y" when it is 0), so
``yield_`` is True when the bit is clear.

Decoding is one struct pass over the section; equal control words share one
:class:`Control` object (a kernel uses only a few hundred distinct ones).
"""

from __future__ import annotations

import struct

from .model import Control

_cache: dict[int, Control] = {}


def decode_word(ctrl: int) -> Control:
    c = _cache.get(ctrl)
    if c is None:
        wb = (ctrl >> 5) & 7
        rb = (ctrl >> 8) & 7
        c = Control(stall=ctrl & 0xF, yield_=not (ctrl >> 4) & 1,
                    write_barrier=None if wb == 7 else wb, read_barrier=None if rb == 7 else rb,
                    wait_mask=(ctrl >> 11) & 0x3F, reuse=(ctrl >> 17) & 0xF)
        _cache[ctrl] = c
    return c


def decode_section(code: bytes) -> list[Control]:
    """Control of every instruction of a code section, instruction k at index k (offset 16*k)."""
    n = len(code) // 16
    his = struct.unpack_from(f"<{2 * n}Q", code)[1::2]
    return [decode_word(hi >> 41) for hi in his]
