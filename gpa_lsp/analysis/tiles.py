"""What the coalesced code of a loop-free kernel pulls from DRAM when its blocks are large or its fix
needs a shared-memory tile: the loads in flight and the factor on the loop-free probe's DRAM roof
(``coalescing.loopfree_dram_roof``), measured by ``benchmarks/coalescing/tile_probe.cu`` (table: the
``tile`` rows of ``gpa_lsp/data/coalescing.json``).

Why: the loop-free roof is the probe's curve of DRAM share against bytes in flight per SM, measured
with blocks of 256 threads whose warps load, store and exit on their own. What the coalesced code
changes in that picture:

* **Large blocks.** A block's resources come back only when its last warp exits, so the SM's loads
  in flight sag while a block drains: the same loads in blocks of 1024 pulled 46.0% of the H200's
  DRAM peak where blocks of 256 pulled 53.1% (64 warps per SM; 25.7% against 29.5% at 32). A
  coalescing fix that keeps the threads keeps the blocks: the factor ``lf_b1024 / lf_b256``.
* **A tile.** When a kernel reads along one index and writes along another (a transpose, a layout
  change: ``coalescing.transposed``), no mapping of threads coalesces both accesses (a remap moves
  the excess from one access to the other); the fix stages each block's data through shared
  memory, with a barrier between every warp's loads and its stores. The probe: one element per thread in
  blocks of 32 x 32 (the first tile one writes) pulls 37.5% (``tile2d_b1024``; the same addresses
  without the tile 40.1%, in blocks of 256 without either 53.1%), while blocks of 256 lose only
  the barrier's 4-6% (``tile_b256``: 50.1% against 53.1% with one load per thread, 68.3% against
  71.0% with two). So the advice names the tile that keeps blocks of 256: a 32 x 32 tile moved by
  32 x 8 threads, ``TILE_ELEMENTS`` each (NVIDIA's transpose post), whose warps have that many
  lines in flight; the roof is the loop-free curve's at those bytes in flight times the barrier's
  factor (``tile_b256_m2 / lf_b256_m2``). The calibration case layout_nhwc (NCHW -> NHWC, 32 x 8
  threads, one element each) is what showed it: priced at its own loads in flight the roof held
  its estimate to 4.3x; the tile moving 4 elements per thread ran 6.2x (events) / 6.5x (kernel
  durations).

Factors are ratios of two rows of one run at the probed warps per SM nearest the kernel's. A device
without the rows (and no chip to borrow them from) gets 1: the loop-free roof as before."""

from __future__ import annotations

from .curves import nearest_warps
from .probe_tables import coalescing_rows

# the advised tile: 32 x 32 elements moved by 32 x 8 threads, so each thread moves 4 of them
TILE_ELEMENTS = 4
# blocks above this many threads are priced by the probe's blocks of 1024, the others by its 256
LARGE_BLOCK = 512


def _rows(ctx) -> list[dict]:
    return coalescing_rows(ctx.device, "tile")


def _share(rows: list[dict], config: str, warps: float) -> tuple[float, int] | None:
    """(the probe's DRAM share of ``config``, its warps per SM) at the probed warps per SM nearest
    ``warps`` (log2)."""
    got = [r for r in rows if r["config"] == config and r.get("dram_pct")]
    if not got or warps <= 0:
        return None
    r = nearest_warps(got, warps)
    return float(r["dram_pct"]), r["warps_per_sm"]


def _ratio(rows: list[dict], config: str, reference: str, warps: float) -> float:
    """``config``'s DRAM share over ``reference``'s at the same probed warps per SM (1.0 without)."""
    got = _share(rows, config, warps)
    if got is None:
        return 1.0
    ref = _share(rows, reference, got[1])
    if ref is None or ref[1] != got[1] or ref[0] <= 0:
        return 1.0
    return min(1.0, got[0] / ref[0])


def tile_share(ctx) -> float | None:
    """The DRAM share (%) the probe's tile reached at the probed warps per SM nearest the kernel's
    (``tile_b256_m2``: blocks of 256, two loads per thread, a padded tile and a barrier), on the
    probe's device: what a transposed kernel's advised tile is priced at (``coalescing.model_at``).

    Why this share and not the loop-free curve's at the advised tile's 4 lines in flight (the roof
    above): behind the barrier a block's loads and stores alternate, and more loads per thread did
    not buy more. The calibration case layout_nhwc, whose tile moves 4 elements per thread, pulled
    69% of DRAM's peak by events (73% by kernel durations) where the probe's tile moving 2 pulled
    68.3% and the curve at 4 lines in flight times the barrier's factor said 81%. None without the
    probe's rows or the kernel's occupancy."""
    occ = ctx.occupancy
    if occ is None or occ.active_warps <= 0:
        return None
    got = _share(_rows(ctx), "tile_b256_m2", occ.active_warps)
    return got[0] if got is not None else None


def coalesced_form(ctx, tile: bool) -> tuple[float, float]:
    """(the coalesced code's loads in flight per warp over the original's, the factor on the
    loop-free roof at those loads): through the advised tile where the kernel's accesses are
    transposed (``tile``: ``coalescing.transposed_accesses``), else the same threads in the same blocks."""
    occ, L = ctx.occupancy, ctx.launch
    if occ is None or L is None or occ.active_warps <= 0:
        return 1.0, 1.0
    rows = _rows(ctx)
    if tile:
        return float(TILE_ELEMENTS), _ratio(rows, "tile_b256_m2", "lf_b256_m2", occ.active_warps)
    if L.threads_per_block > LARGE_BLOCK:
        return 1.0, _ratio(rows, "lf_b1024_m1", "lf_b256_m1", occ.active_warps)
    return 1.0, 1.0
