"""The advisor: programs + profile -> blamed samples -> advice per kernel, assembled here (where
it goes, its share, regions, hotspots and fix) and ordered by ``analysis.ranking``.

``analyze`` is pure (no files besides the sources a fix reads through the
reader); ``advise_bundle`` reads a recorded bundle and calls it.
"""

from __future__ import annotations

import os
from operator import attrgetter
from collections import defaultdict
from dataclasses import asdict, replace
from typing import Callable, Mapping, Sequence

from gpa_lsp.errors import CubinError
from gpa_lsp.gcpause import gc_paused
from gpa_lsp.profile.bundle import Bundle, read_bundle
from gpa_lsp.profile.source_paths import content_source_map, map_source_path, project_root
from gpa_lsp.profile.demangle import unqualified_name
from gpa_lsp.profile.model import Device, Kernel, Launch, PCStats, Profile
from gpa_lsp.sass import load_program
from gpa_lsp.sass.model import Function, Program

from .blame import EDGE_DEF, EDGE_LATENCY, EDGE_STALL, blame_function
from .context import KernelContext, kernel_fact
from .line_stats import line_stats
from .ranking import limiter, rank
from .model import Advice, HotRegion, Hotspot, KernelReport, Location, Report
from .occupancy import device_for, occupancy
from .probe_tables import coverage
from .optimizers import REGISTRY, ChangeKind, Estimator, Match, Optimizer
from .sources import LineReader, find_function, make_reader

MIN_SPEEDUP = 1.005          # below this an optimizer has nothing worth saying
MAX_REGIONS = 5
MAX_HOTSPOTS = 5


def analyze(programs: Mapping[str, Program], profile: Profile, *, config=None,
            reader: LineReader | None = None, path_map: Callable[[str], str] | None = None,
            optimizers: Sequence[Optimizer] = REGISTRY, source: str = "") -> Report:
    """Blame, match and estimate every profiled kernel whose cubin is in ``programs`` (sha256 -> Program)."""
    with gc_paused():   # ~10^5 small tuples, no cycles: see gpa_lsp/gcpause.py
        return _analyze(programs, profile, config=config, reader=reader, path_map=path_map,
                        optimizers=optimizers, source=source)


def _analyze(programs, profile, *, config, reader, path_map, optimizers, source) -> Report:
    reader = reader or make_reader()
    path_map = path_map or (lambda p: p)
    max_advice = config.advice.max_per_kernel if config is not None else 8
    grand_total = sum([n for p in profile.pcs for _, n in p.stalls]) or 0   # PCStats.total, summed inline (ints)
    by_kernel: dict[tuple[str, str], list[PCStats]] = defaultdict(list)
    for p in profile.pcs:
        by_kernel[(p.cubin, p.function)].append(p)
    kernels = []
    for k in profile.kernels:
        program = programs.get(k.cubin)
        if program is None:
            continue
        rep = analyze_kernel(program, k, by_kernel.get((k.cubin, k.name), []), profile.device,
                             reader=reader, path_map=path_map, optimizers=optimizers, max_advice=max_advice,
                             grand_total=grand_total)
        if rep is not None:
            kernels.append(rep)
    kernels.sort(key=lambda r: -r.samples)
    return Report(device=asdict(profile.device), collector=profile.collector, kernels=tuple(kernels),
                  total_samples=grand_total, source=source)


def kernel_functions(program: Program, kernel: str) -> tuple[Function | None, list[Function]]:
    entry = program.function(kernel)
    if entry is None:
        for f in program.functions:
            if f.section in (kernel, ".text." + kernel):
                entry = f
                break
    if entry is None:
        return None, []
    return entry, [f for f in program.functions if f.section == entry.section]


def build_context(program: Program, kernel: Kernel, pcs: Sequence[PCStats], device: Device,
                  reader: LineReader) -> KernelContext | None:
    entry, functions = kernel_functions(program, kernel.name)
    if entry is None:
        return None
    per_fn: dict[str, dict[int, PCStats]] = defaultdict(dict)
    owner = {ins.offset: f.name for f in functions for ins in f.instructions}
    for p in pcs:
        name = owner.get(p.offset)
        if name is not None:
            per_fn[name][p.offset] = p
    sm = program.sm or device.sm or 90
    blames = [blame_function(f, per_fn.get(f.name, {}), sm=sm) for f in functions]
    if not device.sm_count:
        device = device_for(sm, device.name)
    launch = _representative_launch(kernel)
    occ = None
    if launch is not None:
        occ = occupancy(device, launch, registers=entry.registers or launch.registers,
                        static_shared=max(entry.shared_static, launch.static_shared))
    return KernelContext(kernel, program, entry, blames, device, launch, occ, reader, sm)


def _representative_launch(kernel: Kernel) -> Launch | None:
    if not kernel.launches:
        return None
    # the most common configuration among the launches
    counts: dict[tuple, int] = defaultdict(int)
    for l in kernel.launches:
        counts[(l.grid, l.block, l.dynamic_shared)] += 1
    key = max(counts, key=counts.get)
    return next(l for l in kernel.launches if (l.grid, l.block, l.dynamic_shared) == key)


def analyze_kernel(program: Program, kernel: Kernel, pcs: Sequence[PCStats], device: Device, *,
                   reader: LineReader, path_map: Callable[[str], str] = lambda p: p,
                   optimizers: Sequence[Optimizer] = REGISTRY, max_advice: int = 8,
                   grand_total: int = 0) -> KernelReport | None:
    ctx = build_context(program, kernel, pcs, device, reader)
    if ctx is None:
        return None
    advice = []
    if ctx.total > 0:
        for opt in optimizers:
            m = opt.match(ctx)
            if m is None or (m.samples <= 0 and opt.kind == ChangeKind.code):
                continue
            est = opt.estimate(ctx, m)
            if est < MIN_SPEEDUP:
                continue
            cap, unit = opt.throughput_bound(ctx, m)
            advice.append(_advice(ctx, opt, m, est, path_map, cap=cap, unit=unit))
    advice = rank(advice, optimizers=optimizers)
    file, line = _kernel_line(ctx)
    by_cat = ctx.by_category     # the same sums, in the same order
    launches = kernel.launches
    durations = [l.duration_ns for l in launches if l.duration_ns]
    return KernelReport(
        name=kernel.name, demangled=kernel.demangled or ctx.entry.demangled, samples=ctx.total,
        share=ctx.total / grand_total if grand_total else 0.0, limiter=limiter(ctx),
        advice=tuple(advice[:max_advice]), lines=line_stats(ctx, path_map),
        file=path_map(file) if file else None, line=line, launches=len(launches),
        duration_ns=int(sum(durations) / len(durations)) if durations else None,
        stall_breakdown=tuple(sorted(by_cat.items(), key=lambda kv: -kv[1])),
        throughput=kernel.throughput.units if kernel.throughput is not None else ())


def _loc(ctx: KernelContext, offset: int, path_map) -> Location:
    site = ctx.site(offset)
    loc = ctx.location(offset) if site else None      # the user's line for toolkit-header code
    fn = site.function.name if site else ctx.entry.name
    if loc is None:
        return Location(file="", line=0, function=fn, offset=offset)
    return Location(file=path_map(loc.file), line=loc.line, function=fn, offset=offset)


@kernel_fact
def _def_regions(ctx: KernelContext) -> dict[int, tuple]:
    """Def offset -> (region key, innermost loop, site), filled as ``_advice`` asks."""
    return {}


def _advice(ctx: KernelContext, opt: Optimizer, m: Match, est: float, path_map, *,
            cap: float = float("inf"), unit: str | None = None) -> Advice:
    """``cap``: the memory-system bound of ``opt`` (inf when unmeasured); it lowers the estimate and
    its range, and the advice names the unit when it did."""
    total = ctx.total or 1
    pairs: dict[tuple[int, int], list] = {}
    for e in m.edges:
        key = (e.def_, e.use)
        got = pairs.get(key)
        if got is None:
            pairs[key] = [0.0 + e.stall, e.distance, e.reason]
        else:
            got[0] += e.stall
            if e.distance > got[1]:
                got[1] = e.distance
    # by matched samples, descending (reverse=True keeps equal ones in their order, as key=-samples
    # did), through a key list so the sort calls no Python function per pair
    items = list(pairs.items())
    hot = [items[k] for k in sorted(range(len(items)), key=[v[0] for _, v in items].__getitem__, reverse=True)]
    # Hotspot objects only for the pairs shown (the top few overall and per region): a large
    # match has 10^4 pairs, of which a region needs only the source lines
    made: dict[int, Hotspot] = {}

    def spot(i: int) -> Hotspot:
        got = made.get(i)
        if got is None:
            (d, u), v = hot[i]
            got = made[i] = Hotspot(_loc(ctx, d, path_map), _loc(ctx, u, path_map), v[1], v[0], v[0] / total, v[2])
        return got

    loc_at = ctx.location
    # regions: innermost loop of the def, else the function
    regions: dict[object, list] = {}
    region_of = _def_regions(ctx)         # pairs share their defs, advice of one kernel too
    site_at, loop_at = ctx.site, ctx.loop_of
    for i, ((d, _), v) in enumerate(hot):
        got = region_of.get(d)
        if got is None:
            site = site_at(d)
            lp = loop_at(d)
            key = (site.function.name, lp.header_offset) if lp else (site.function.name if site else "", None)
            got = region_of[d] = (key, lp, site)
        r = regions.get(got[0])
        if r is None:
            r = regions[got[0]] = [got[1], got[2], 0.0, []]
        r[2] += v[0]
        r[3].append(i)
    out_regions = []
    for key, (lp, site, samples, members) in sorted(regions.items(), key=lambda kv: -kv[1][2])[:MAX_REGIONS]:
        dlocs = [loc_at(hot[i][0][0]) for i in members]
        ulocs = [loc_at(hot[i][0][1]) for i in members]
        lines = [l.line for l in dlocs if l is not None and l.line] + [l.line for l in ulocs if l is not None and l.line]
        file = next((f for f in (path_map(l.file) for l in dlocs if l is not None) if f), "")
        spots = [spot(i) for i in members[:MAX_HOTSPOTS]]
        rng = (min(lines), max(lines)) if lines else (0, 0)
        if lp is not None:
            name = f"loop at {os.path.basename(lp.file or file)}:{lp.line}" if lp.line else "loop"
            kind = "loop"
            if lp.line:
                rng = (min(rng[0], lp.line) if rng[0] else lp.line, max(rng[1], lp.line))
        else:
            fn = site.function if site else ctx.entry
            name = (fn.demangled or fn.name)
            kind = "kernel" if fn.entry else "function"
        out_regions.append(HotRegion(kind, name, file, rng, samples, samples / total, tuple(spots[:MAX_HOTSPOTS])))
    fix = opt.fix(ctx, m)
    if fix is not None and fix.file:
        fix = replace(fix, file=path_map(fix.file))
    place = opt.source_place(ctx, m) if fix is None and opt.kind == ChangeKind.code else None
    if place is not None and place[0]:
        # code advice with no mechanical fix whose place is a region (the loop whose trip count to fix)
        location = Location(path_map(place[0]), place[1], ctx.entry.name)
    else:
        location = _advice_location(ctx, opt, m, fix, path_map)
    if location is None and opt.kind == ChangeKind.parallel:
        f, l = opt.source_place(ctx, m) or _kernel_line(ctx)
        if f:
            location = Location(path_map(f), l or 1, ctx.entry.name)
    if location is None:
        if fix is not None and fix.file and fix.line:
            location = Location(fix.file, fix.line, ctx.entry.name)
        else:
            f, l = _kernel_line(ctx)
            if f:
                location = Location(path_map(f), l or 1, ctx.entry.name)
    matched = m.samples if opt.kind == ChangeKind.code else 0.0
    latency = Estimator(opt.method_for(m)).hides_latency
    ratio = (m.latency if latency else m.samples) / total if opt.kind == ChangeKind.code else 0.0
    bounded = est > cap
    point = round(max(1.0, min(est, cap)), 4)
    rng = opt.estimate_range(ctx, m, point)
    low, high = (None, None) if rng is None else (round(max(1.0, min(rng[0], cap)), 4),
                                                  round(max(point, min(rng[1], cap)), 4))
    pct = opt.bound_pct(ctx, m, unit) if bounded and unit else None
    return Advice(optimizer=opt.id, title=opt.title, kind=opt.kind, estimated_speedup=point,
                  ratio=ratio, matched_samples=matched, suggestion=opt.describe(ctx, m), location=location,
                  regions=tuple(out_regions), hotspots=tuple(spot(i) for i in range(min(MAX_HOTSPOTS, len(hot)))),
                  fix=fix,
                  estimate_low=low, estimate_high=high,
                  bounded_by=unit if bounded else None, bounded_pct=pct, kernel_samples=ctx.total,
                  hides_latency=latency)


_stall = attrgetter("stall")


class _DefKeys(dict):
    """Def offset -> where ``_advice_location`` sums its samples: (file, line), or (file, def)
    for latency hiding; None when the def has no line. Filled on first ask."""

    def __init__(self, ctx: KernelContext, by_def: bool):
        super().__init__()
        self.location, self.by_def = ctx.location, by_def

    def __missing__(self, d: int):
        loc = self.location(d)
        key = self[d] = None if loc is None or not loc.line else (loc.file, d) if self.by_def else (loc.file, loc.line)
        return key


@kernel_fact
def _def_keys(ctx: KernelContext, by_def: bool) -> _DefKeys:
    return _DefKeys(ctx, by_def)


def _advice_location(ctx: KernelContext, opt: Optimizer, m: Match, fix, path_map) -> Location | None:
    """Where the advice is shown: the source line whose defs carry the most of what the
    estimator counts, or the fix's line for advice whose cost belongs to a region.

    Why not the def of the single hottest pair: the samples of one statement are spread over
    many instructions (an unrolled loop's copies, a division's expansion), so a line whose
    instructions each cause little can still hold most of the cost. Summing per def line
    finds the statement the advice is about: deleting or rewriting a statement removes all of
    its instructions. Latency hiding is different: it moves one def away from its use, and
    what that wins back is that def's own latency, not its line's -- the copies of an unrolled
    statement are separate instructions, each needing its own move -- so there the def with
    the most matched *latency* samples (the scheduler idled; Eq. 3-5's quantity) is shown.
    A fix that rewrites a statement whose instructions cause matched stalls (a double literal)
    puts the advice on that statement, so the diagnostic and its quick fix agree; a fix
    elsewhere (a qualifier in the signature, a pragma on a loop header, a launch in host code)
    is offered at its own place. Throttle matched on *other* instructions through a shared queue
    (``Match.queue_uses``) counts in the estimate but never places the advice. Instruction-fetch advice
    (``Optimizer.region_cost``) is different: the stalled instruction only waits for code
    that the region's size pushed out of the cache, so no statement inside is the cause; the
    region the fix edits (the loop, the function) is. An advice priced by a model of the code
    rather than by its matched stalls names its own place (``Optimizer.placed_at``).
    """
    placed = opt.placed_at(ctx, m)
    if placed is not None:
        return _loc(ctx, placed, path_map)
    if fix is not None and fix.file and fix.line:
        if opt.region_cost:
            return Location(fix.file, fix.line, ctx.entry.name)
        for e in m.edges:
            loc = ctx.location(e.def_)
            if e.stall > 0 and loc is not None and loc.line == fix.line and path_map(loc.file) == fix.file:
                # the fix rewrites a statement that causes matched stalls: show the advice (and its
                # quick fix) there, even when another statement holds more of the match
                return _loc(ctx, e.def_, path_map)
    latency = Estimator(opt.method_for(m)).hides_latency
    # throttle on other instructions behind the matched ones in a shared queue (optimizers/shared.py) is
    # part of the cost, not a place to change
    queued = m.queue_uses
    # by stall, descending; reverse=True keeps equal stalls in their order, as key=-stall did
    edges = sorted(m.edges, key=_stall, reverse=True)
    if queued:
        edges = [e for e in edges if not (e.category == "self" and e.use in queued)]
    # each edge's key (None: its def has no line), through the kernel's per-def table
    keys = list(map(_def_keys(ctx, latency).__getitem__, map(EDGE_DEF, edges)))
    by_line: dict[tuple[str, int], float] = {}
    get = by_line.get
    for k, v in zip(keys, map(EDGE_LATENCY if latency else EDGE_STALL, edges)):
        if k is not None:
            by_line[k] = get(k, 0.0) + v        # summed in the sorted order
    if not by_line:
        return None
    order = {k: i for i, k in enumerate(dict.fromkeys(keys))}          # first appearance
    first = dict(zip(reversed(keys), map(EDGE_DEF, reversed(edges))))      # key -> its first edge's def
    best = max(by_line, key=lambda k: (by_line[k], -order[k]))
    return _loc(ctx, first[best], path_map)


def _kernel_line(ctx: KernelContext) -> tuple[str | None, int | None]:
    locs = [i.loc for i in ctx.entry.instructions if i.loc is not None and not i.inline]
    if not locs:
        return None, None
    file = locs[0].file
    lines = ctx.reader(file)
    name = unqualified_name(ctx.entry.demangled or ctx.entry.name)
    if lines is not None and name:
        got = find_function(lines, name)
        if got:
            return file, got
    return file, min(l.line for l in locs if l.file == file)


def advise_bundle(bundle_or_path, *, config=None, source_map: Sequence[tuple[str, str]] = (),
                  root: str | None = None, overrides: dict[str, str] | None = None) -> Report:
    """Read a recorded bundle (or take a Bundle) and analyse it. Sources are found through ``source_map``."""
    if isinstance(bundle_or_path, Bundle):
        bundle, source = bundle_or_path, ""
    else:
        source = str(bundle_or_path)
        bundle = read_bundle(bundle_or_path)
    smap = tuple(source_map) + (tuple(config.source_map) if config is not None else ())
    root = root or (config.root if config is not None else None)
    programs, problems = _programs(bundle)
    cache: dict[str, str] = {}

    def path_map(p: str) -> str:
        if p not in cache:
            cache[p] = map_source_path(p, smap, root, bundle.manifest) if p else p
        return cache[p]

    reader = make_reader(overrides=overrides, mapper=path_map)
    report = analyze(programs, bundle.profile, config=config, reader=reader, path_map=path_map, source=source)
    tables = coverage(bundle.profile.device) if report.kernels else None
    problems = problems + (tables,) if tables else problems   # probe tables borrowed or missing: say so
    return replace(report, problems=problems) if problems else report


def advise_recording(bundle_path: str | os.PathLike, source_map: Sequence[tuple[str, str]] = ()) -> Report:
    """The report of a bundle as ``gpa diff`` compares it: sources under the bundle's project
    (``project_root``), found by content where names mislead (``content_source_map``)."""
    bundle = read_bundle(bundle_path)
    root = project_root(bundle_path)
    smap = tuple(source_map) + tuple(content_source_map(bundle, root))
    report = advise_bundle(bundle, source_map=smap, root=str(root))
    return replace(report, source=str(bundle_path))


def _programs(bundle) -> tuple[dict[str, Program], tuple[str, ...]]:
    """The Program of every profiled cubin. A cubin that cannot be read (a damaged one that nvdisasm
    rejects, or spins on until its timeout) is skipped with a note, so the other kernels are still
    analysed; when none can be read, the first error is raised."""

    programs: dict[str, Program] = {}
    problems: list[str] = []
    first: CubinError | None = None
    for sha, data in bundle.cubins.items():
        names = [k.demangled or k.name for k in bundle.profile.kernels if k.cubin == sha]
        if not names:
            continue
        try:
            programs[sha] = load_program(data)
        except CubinError as exc:
            first = first or exc
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            problems.append(f"kernel {shown} not analysed (cubin {sha[:12]}): {exc.message}")
    if first is not None and not programs:
        raise first
    return programs, tuple(problems)
