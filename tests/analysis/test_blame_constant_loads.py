"""A wait on an LDC is a short-scoreboard stall (benchmarks/blame/ldc, recorded on an H200 with both
collectors), so the blamer gives long-scoreboard stalls to global loads only; checked on the probe's
recordings and on lj_neighbors, whose loop's first wait is on a scoreboard an LDC.64 of a kernel
parameter and the LDG of its neighbour index share."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bundle_contexts import contexts_of
from gpa_lsp.profile.bundle import read_bundle

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "benchmarks/blame/ldc/recorded"


def _reasons(bundle: Path) -> dict[str, Counter]:
    prof = read_bundle(bundle).profile
    out = {}
    for k in prof.kernels:
        c = Counter()
        for p in prof.pcs_of(k.name):
            for r, n in p.stalls:
                c[r] += n
        out[k.name] = c
    return out


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_the_hardware_calls_a_wait_on_an_ldc_a_short_scoreboard_stall(collector):
    got = _reasons(PROBE / f"ldc.{collector}.gpabundle")
    cchase = next(c for n, c in got.items() if "cchase" in n)
    gchase = next(c for n, c in got.items() if "gchase" in n)
    assert cchase["short_scoreboard"] > 0.99 * sum(cchase.values())
    assert cchase["long_scoreboard"] < 0.001 * sum(cchase.values())
    assert gchase["long_scoreboard"] > 0.7 * sum(gchase.values())


@pytest.mark.parametrize("collector", ["cupti", "ncu"])
def test_no_long_scoreboard_stall_is_blamed_on_a_constant_load(collector):
    for name in (PROBE / f"ldc.{collector}.gpabundle", ROOT / f"kernels/lj_neighbors/recorded/{collector}.gpabundle"):
        for ctx in contexts_of(name)[0]:
            for e in ctx.edges:
                if e.reason == "memory_dependency":
                    assert ctx.site(e.def_).instruction.base_opcode != "LDC", (name.name, e)


def test_lj_neighbors_first_wait_is_the_neighbour_index_load():
    """IMAD.WIDE R24, R27, 0x4, R14 waits on SB0, set by LDC.64 R14 (a parameter) and LDG.E R27
    (neigh[k * n + i], line 24): its long-scoreboard stalls are the LDG's."""
    (ctx,), _ = contexts_of(ROOT / "kernels/lj_neighbors/recorded/cupti.gpabundle")
    waits = [e for e in ctx.edges if e.reason == "memory_dependency"
             and ctx.site(e.use).instruction.base_opcode == "IMAD" and ctx.site(e.use).instruction.loc.line == 25]
    by_def = Counter()
    for e in waits:
        d = ctx.site(e.def_).instruction
        by_def[(d.base_opcode, d.loc.line)] += e.stall
    # the two copies of the loop's wait (0x0380 and 0x0850): 47% of the kernel's samples, all the index load's
    assert set(by_def) == {("LDG", 24)}
    assert by_def[("LDG", 24)] > 0.4 * ctx.total
