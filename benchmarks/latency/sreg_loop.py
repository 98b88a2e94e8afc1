"""Fixed stall cycles of the special-register loops of latency.cu, from `cuobjdump -sass` text.

Standard library only (it runs on the GPU machine). Usage:
``cuobjdump -sass latency | python3 sreg_loop.py`` prints four integers,
``S2UR_TAIL S2R_TAIL 0 BASE_STALLS`` (latency.cu's arguments):

- S2UR_TAIL / S2R_TAIL: in ``k_sreg<1>``'s / ``k_sreg<2>``'s timed loop, the stall counts (control code bits
  105..108) of the instructions from the first one that waits on the special
  register read's scoreboard through the loop's backward branch. The time from
  the read's issue to that consumer's issue is the read's latency; the rest of
  a trip is these fixed stalls.
- BASE_STALLS: the stall counts of all of ``k_sreg<0>``'s loop (the same loop
  adding a register), so that ``trip_base - BASE_STALLS`` is what a taken
  branch costs beyond its stall count.

Then latency = trip_read - READ_TAIL - (trip_base - BASE_STALLS).
"""

from __future__ import annotations

import re
import sys

INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
HI = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")
BRA = re.compile(r"BRA\s+(?:`\()?(0x[0-9a-f]+|\.L_x_\d+)")


def functions(text: str) -> dict[str, list[tuple[int, str, int]]]:
    """name -> [(offset, instruction text, control word)]."""
    out: dict[str, list[tuple[int, str, int]]] = {}
    cur: list | None = None
    pending = None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            pending = None
            continue
        if cur is None:
            continue
        m = INS.search(line)
        if m:
            pending = (int(m.group(1), 16), m.group(2))
            continue
        m = HI.match(line)
        if m and pending is not None:
            cur.append((pending[0], pending[1], int(m.group(1), 16) >> 41))
            pending = None
    return out


def loop(ins: list[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    """The body of the innermost backward branch (the timed do-while loop)."""
    for off, text, _ in ins:
        m = BRA.search(text)
        if m and m.group(1).startswith("0x"):
            target = int(m.group(1), 16)
            if target < off:
                return [i for i in ins if target <= i[0] <= off]
    raise SystemExit("no backward branch found")


def stall(ctrl: int) -> int:
    return ctrl & 0xF


def tail(ins: list[tuple[int, str, int]], opcode: str) -> int:
    body = loop(ins)
    idx = next(i for i, (_, t, _) in enumerate(body) if t.startswith(opcode + " ") and "SR_VIRTUALSMID" in t)
    wb = (body[idx][2] >> 5) & 7
    consumer = next(i for i in range(idx + 1, len(body)) if (body[i][2] >> 11) & (1 << wb))
    return sum(stall(c) for _, _, c in body[consumer:])


def main() -> None:
    funcs = functions(sys.stdin.read())
    def fn(mode: str):
        return next(v for k, v in funcs.items() if "k_sreg" in k and f"ILi{mode}E" in k)
    base_stalls = sum(stall(c) for _, _, c in loop(fn("0")))
    print(tail(fn("1"), "S2UR"), tail(fn("2"), "S2R"), 0, base_stalls)


if __name__ == "__main__":
    main()
