"""Loads aliasing serializes (``sass.batches.aliased_rounds``), on the batch probe compiled by nvcc:
benchmarks/restrict/batch_probe.cu builds every walk plain and with ``__restrict__``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpa_lsp.sass import load_program
from gpa_lsp.sass.batches import aliased_rounds, load_rounds, loads_behind_barriers
from gpa_lsp.sass.opcodes import GLOBAL_LOADS

PROBE = Path(__file__).resolve().parents[2] / "benchmarks" / "restrict" / "batch_probe.cu"


@pytest.fixture(scope="module")
def probe(build_cubin):
    return load_program(build_cubin(PROBE))


def _fn(program, name):
    return next(f for f in program.functions if f.name.startswith(f"_Z{len(name)}{name}"))


@pytest.mark.parametrize("kernel", ["map_plain", "col_plain"])
def test_a_walk_through_aliasing_pointers_is_one_round_per_load(probe, kernel):
    """nvcc unrolls the walk by 16 and keeps each load below the previous store, which waits for the
    load before it: 16 rounds, 1 once hoisted (the addresses come from no load)."""
    got = aliased_rounds(_fn(probe, kernel))
    assert got and set(got.values()) == {16.0}
    loads = [i for i in _fn(probe, kernel).instructions if i.base_opcode in GLOBAL_LOADS]
    assert set(got) <= {i.offset for i in loads} and len(got) >= 16


def test_only_the_walk_that_stores_is_serialized(probe):
    """soft: the read-only sum loop (32 loads in its unrolled body) already has its loads in flight
    together; only the store pass's 16 loads count."""
    fn = _fn(probe, "soft_plain")
    got = aliased_rounds(fn)
    assert set(got.values()) == {16.0} and len(got) == 16
    loads = [i.offset for i in fn.instructions if i.base_opcode in GLOBAL_LOADS]
    assert len(loads) >= 48 and set(got) == set(loads[-16:])


@pytest.mark.parametrize("kernel", ["map_restrict", "col_restrict", "soft_restrict"])
def test_restrict_leaves_nothing_to_batch(probe, kernel):
    """With ``__restrict__`` the loads are ``.CONSTANT`` and go out ahead of the stores."""
    assert aliased_rounds(_fn(probe, kernel)) == {}


RESTRICT_PROBE = PROBE.with_name("restrict.cu")


@pytest.fixture(scope="module")
def restrict_probe(build_cubin):
    return load_program(build_cubin(RESTRICT_PROBE))


@pytest.mark.parametrize("kernel, fewer_trips, fewer_behind_barriers", [
    ("hoist", True, False),      # loads behind the previous iteration's store (measured 1.12x / 2.77x)
    ("barrier", True, True),     # a load after __syncthreads (measured 1.86x)
    ("stream", False, False),    # nothing to move (1.00x)
    ("gather", False, False),    # a read-only loop (1.00x)
])
def test_what_gpa_verify_compares_for_a_restrict_fix(restrict_probe, kernel, fewer_trips, fewer_behind_barriers):
    """The plain and the restrict build of each probe kernel: round trips of global loads
    (``load_rounds``) and loads a barrier precedes (``loads_behind_barriers``)."""
    plain, restricted = _fn(restrict_probe, f"{kernel}_plain"), _fn(restrict_probe, f"{kernel}_restrict")
    assert (load_rounds(restricted) < load_rounds(plain)) == fewer_trips
    assert load_rounds(restricted) <= load_rounds(plain)
    assert (loads_behind_barriers(restricted) < loads_behind_barriers(plain)) == fewer_behind_barriers
