"""Verify the top mechanical fixes of a report: plan, scratch build, static compare, time, store.

    report, results = verify_report(config, bundle_path, report, options)

Static checks run wherever nvcc runs; timing needs a GPU and ``options.dynamic`` (the caller
decides trust: nvcc and the harness on untrusted sources are code execution). A result already
stored for the same experiment is reused (``store.lookup``); a static result is re-done when
timing is possible now.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..analysis.advisor import advise_bundle, build_context
from ..analysis.model import Advice, KernelReport, Report, to_json
from ..analysis.optimizers.restrict_pointer import kernel_reloads
from ..analysis.sources import make_reader
from ..build import build_cubins
from ..config import Config
from ..errors import BuildError, GpaError
from ..fixes import apply_plan, plan_fix  # the same edits as the editor's quick fix
from ..profile.bundle import read_bundle
from ..profile.source_paths import map_source_path
from ..profile.demangle import base_name
from ..sass import load_program
from ..sass.batches import load_rounds, loads_behind_barriers
from . import dynamic, static, store, timing
from .apply import attach, worth_trying
from .model import Verification, short_device
from .scratch import Scratch, make


@dataclass(frozen=True)
class Options:
    top: int = 3                 # fixes tried, over all kernels, by estimate
    dynamic: bool = False        # time on the GPU (trusted workspace with a GPU only)
    pairs: int = timing.MIN_PAIRS
    budget_s: float = 60.0       # wall time for the timing phase
    only: int | None = None      # 1-based index among the candidates (gpa verify --fix N)
    store: bool = True           # keep the results in the bundle
    store_path: str | None = None  # keep them here instead (a .json: the editor's cache for a replayed bundle)


Log = Callable[[str], None]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class _Keys:
    """(file relative to the project, line) keys for instructions of the three compilations."""

    def __init__(self, config: Config, path_map: Callable[[str], str]) -> None:
        self.root = os.path.realpath(config.root)
        self.path_map = path_map

    def rel(self, path: str, scratch_root: str | None = None) -> str:
        p = os.path.realpath(path)
        if scratch_root:
            sr = os.path.realpath(scratch_root)
            if p == sr or p.startswith(sr + os.sep):
                return os.path.relpath(p, sr)
        return os.path.relpath(p, self.root)

    def recorded(self, ins):
        if ins.loc is None or not ins.loc.line:
            return None
        return (self.rel(self.path_map(ins.loc.file or "")), ins.loc.line)

    def rebuilt(self, scratch: Scratch, shifts: dict[str, Callable[[int], int]] | None = None):
        root = str(scratch.root)

        def key(ins):
            if ins.loc is None or not ins.loc.line:
                return None
            f = self.rel(ins.loc.file or "", root)
            line = ins.loc.line
            if shifts and f in shifts:
                line = shifts[f](line)
            return (f, line)
        return key


def _function(cubins: list[Path], name: str, demangled: str):
    """The kernel ``name`` (mangled) in rebuilt cubins. A fix may change its mangled name (``const``
    on a pointer parameter does): then the one function of the same bare name and arity."""
    progs = [load_program(c.read_bytes()) for c in cubins]
    for prog in progs:
        f = prog.function(name)
        if f is not None:
            return f
    want = base_name(demangled or name)
    same = [f for prog in progs for f in prog.functions if f.entry and base_name(f.demangled or f.name) == want]
    return same[0] if len(same) == 1 else None


class Experiment:
    """One report's verification: shared original scratch build, one variant per candidate."""

    def __init__(self, config: Config, bundle_path: str, cancel: threading.Event | None, log: Log) -> None:
        self.config = config
        self.cancel = cancel
        self.log = log
        self.bundle = read_bundle(bundle_path)
        smap = tuple(config.source_map)
        self.path_map = lambda p: map_source_path(p, smap, config.root, self.bundle.manifest) if p else p
        self.keys = _Keys(config, self.path_map)
        self.reader = make_reader(mapper=self.path_map)
        self._original: tuple[Scratch, list[Path]] | None = None
        self._copy: Scratch | None = None
        self.scratches: list[Scratch] = []
        self._lock = threading.Lock()
        self._contexts: dict[str, object] = {}

    def close(self) -> None:
        for s in self.scratches:
            s.cleanup()

    def original_copy(self) -> Scratch:
        """The unedited project's scratch copy: its cubins (static compare) and its program (timing)."""
        if self._copy is None:
            self._copy = make(self.config, {})
            self.scratches.append(self._copy)
        return self._copy

    def original(self) -> tuple[Scratch, list[Path]]:
        if self._original is None:
            s = self.original_copy()
            self._original = (s, build_cubins(s.config, s.home / "cubins", self.cancel))
        return self._original

    def context(self, kernel: KernelReport):
        with self._lock:          # one blame per kernel, shared by the candidates' threads
            if kernel.name not in self._contexts:
                self._contexts[kernel.name] = self._context(kernel)
            return self._contexts[kernel.name]

    def _context(self, kernel: KernelReport):
        k = self.bundle.profile.kernel(kernel.name)
        if k is None or k.cubin not in self.bundle.cubins:
            return None
        program = load_program(self.bundle.cubins[k.cubin])
        return build_context(program, k, self.bundle.profile.pcs_of(k.name), self.bundle.profile.device, self.reader)

    def static(self, kernel: KernelReport, advice: Advice, plan, texts: dict[str, str]) -> tuple[Verification, Scratch | None]:
        fix = advice.fix
        title = plan.title
        base = Verification(status="static", fix=title, estimated=advice.estimated_speedup)
        s = make(self.config, texts, extra_flags=tuple(plan.nvcc_flags))
        self.scratches.append(s)
        if fix.kind in static.HOST_ONLY:
            return dataclasses.replace(base, note="host code only: the kernel's SASS does not change"), s
        if not self.config.build.sources:
            return dataclasses.replace(base, note="a custom [build] command: compared by timing only"), s
        try:
            orig_scratch, orig_cubins = self.original()
        except BuildError as exc:
            raise GpaError("the unedited project does not build in a scratch copy: " + exc.message, exc.hint) from None
        try:
            var_cubins = build_cubins(s.config, s.home / "cubins", self.cancel)
        except BuildError as exc:
            return dataclasses.replace(base, status="no_build", note=(exc.output or exc.message)[-300:]), None
        before = _function(orig_cubins, kernel.name, kernel.demangled)
        after = _function(var_cubins, kernel.name, kernel.demangled)
        if before is None or after is None:
            return dataclasses.replace(base, note=f"{kernel.name} not found in the rebuilt cubins"), s
        shifts = {}
        for e in plan.edits:
            rel = self.keys.rel(e.file)
            if rel not in shifts:
                shifts[rel] = static.line_shift(plan.edits, e.file)
        ctx = self.context(kernel)
        hot = static.sampled_lines(ctx, self.keys.recorded) if ctx is not None else set()
        diff, removed = static.compare(before, after, sampled_lines=hot,
                                       key_before=self.keys.rebuilt(orig_scratch),
                                       key_after=self.keys.rebuilt(s, shifts))
        if not diff.hot_changed:
            return dataclasses.replace(base, status="unchanged", diff=diff, static_speedup=1.0,
                                       note="the compiler already produces this code"), None
        est = None
        factor = int((fix.params or {}).get("factor", 1) or 1)
        less = bool((fix.params or {}).get("less"))     # Loop No-Unroll's pragma is meant to shrink
        if fix.kind == "unroll" and not less and factor > 1 and diff.instructions[1] < diff.instructions[0]:
            # `#pragma unroll N` also caps the unrolling: a shorter function means nvcc had unrolled
            # the loop further by itself and the pragma lowers it (dot_runtime_unroll: 0.60x)
            return dataclasses.replace(base, diff=diff, static_speedup=1.0,
                                       note="nvcc already unrolls this loop further: the pragma would "
                                            f"lower it ({diff.instructions[0]} -> {diff.instructions[1]} "
                                            "instructions)"), s
        if fix.kind == "restrict" and ctx is not None and not kernel_reloads(ctx):
            # no reloads: the gain is loads going out ahead of stores and barriers, which no deletion
            # shows; the rebuilt fix's round trips say whether nvcc let them (sass/batches.py)
            trips = load_rounds(before), load_rounds(after)
            if trips[1] < trips[0]:
                return dataclasses.replace(base, diff=diff, note=f"the loads go out together: {trips[0]} -> "
                                                                 f"{trips[1]} round trips through global memory"), s
            behind = loads_behind_barriers(before), loads_behind_barriers(after)
            if behind[1] < behind[0]:
                return dataclasses.replace(base, diff=diff, note=f"loads move above the barriers: {behind[0]} -> "
                                                                 f"{behind[1]} behind one"), s
            return dataclasses.replace(base, diff=diff, static_speedup=1.0,
                                       note="no load goes out earlier in the fix's build: no round trip saved"), s
        if fix.kind in static.DELETING and ctx is not None:
            counts = {k: len(v) for k, v in static.groups(before, self.keys.rebuilt(orig_scratch)).items()}
            deleted = static.deleted_offsets(ctx.entry, removed, self.keys.recorded, counts) if removed else frozenset()
            for fb in ctx.blames:
                if fb.function is not ctx.entry and removed:
                    deleted |= static.deleted_offsets(fb.function, removed, self.keys.recorded, counts)
            est, samples = static.deletion_estimate(ctx, deleted)
            diff = dataclasses.replace(diff, vanished_samples=round(samples, 3))
            # the deletion model is an upper bound (every sample of a deleted instruction and every
            # wait for it vanishes; replacements and waits that move are free): it can show that the
            # optimizer's mechanism is absent (nothing vanished: 1.0x), never raise its estimate
            est = min(est, advice.estimated_speedup)
        return dataclasses.replace(base, diff=diff, static_speedup=None if est is None else round(est, 4)), s


def _plan(advice: Advice):
    return plan_fix(advice.fix, _read)


def verify_report(config: Config, bundle_path: str, report: Report, options: Options = Options(), *,
                  cancel: threading.Event | None = None, log: Log = lambda m: None,
                  progress: Callable[[int, int, str], None] = lambda i, n, what: None) -> tuple[Report, list[Verification]]:
    cands = worth_trying(report, options.top if options.only is None else max(options.top, options.only))
    if options.only is not None:
        cands = cands[options.only - 1:options.only]
    if not cands:
        return report, []
    where = options.store_path or bundle_path
    stored = store.read(where)
    device = str(report.device.get("name", "")) if isinstance(report.device, dict) else ""
    exp = Experiment(config, bundle_path, cancel, log)
    results: dict[tuple[str, str], Verification] = {}
    to_time: list[tuple[tuple[str, str], Verification, Scratch]] = []
    try:
        todo = []          # (index, kernel, advice, plan, edited texts, key)
        for i, (k, a) in enumerate(cands, 1):
            plan = _plan(a)
            if plan is None:
                results[(k.name, a.optimizer)] = Verification(status="no_fix", estimated=a.estimated_speedup,
                                                              note="the fix does not apply to the current text")
                continue
            files = sorted({e.file for e in plan.edits})
            before = {f: _read(f) or "" for f in files}
            after = apply_plan(plan, before)
            flags = tuple(config.build.nvcc_flags) + tuple(plan.nvcc_flags)
            key = store.experiment_key(before, to_json(a.fix), flags)
            old = store.lookup(stored, key, device)
            reuse = old is not None and (not options.dynamic or old.status in ("unchanged", "no_build", "no_fix")
                                         or (old.status == "measured" and old.device == device))
            if reuse:
                results[(k.name, a.optimizer)] = dataclasses.replace(old, estimated=a.estimated_speedup)
                log(f"{plan.title}: stored result ({old.status})")
                continue
            todo.append((i, k, a, plan, after, key))
        if todo and config.build.sources:
            try:
                exp.original()        # built once, before the variants build in parallel
            except BuildError as exc:
                raise GpaError("the unedited project does not build in a scratch copy: " + exc.message,
                               exc.hint) from None
        def one(item):
            i, k, a, plan, after, key = item
            if cancel is not None and cancel.is_set():
                return item, None, None
            progress(i, len(cands), plan.title)
            log(f"verifying {i}/{len(cands)}: {plan.title} ...")
            v, scratch = exp.static(k, a, plan, after)
            return item, dataclasses.replace(v, key=key), scratch
        with ThreadPoolExecutor(max_workers=BUILD_WORKERS) as pool:
            for (i, k, a, plan, _, _), v, scratch in pool.map(one, todo):
                if v is None:
                    continue
                results[(k.name, a.optimizer)] = v
                log(f"  {plan.title}: {v.summary()}")
                if options.dynamic and scratch is not None and v.status == "static":
                    to_time.append(((k.name, a.optimizer), v, scratch))
        if cancel is not None and cancel.is_set():
            return report, []
        if options.dynamic and to_time:
            results.update(_time(exp, report, to_time, options, cancel, log))
    finally:
        exp.close()
    new = [v for v in results.values() if v.key]
    if options.store and new:
        try:
            store.write(where, new)
        except OSError as exc:
            log(f"could not store the verification results in {where}: {exc}")
    return attach(report, results), list(results.values())


BUILD_WORKERS = max(1, min(8, (os.cpu_count() or 2) // 2))


def _try(fn):
    """fn() or the GpaError it raised (for pool.map)."""
    try:
        return fn()
    except GpaError as exc:
        return exc


def _time(exp: Experiment, report: Report, to_time, options: Options, cancel, log) -> dict:
    """Time the original and the variants, kernel by kernel, interleaved (the original built once)."""
    out: dict = {}
    deadline = time.monotonic() + options.budget_s
    by_kernel: dict[str, list] = {}
    for item in to_time:
        by_kernel.setdefault(item[0][0], []).append(item)
    # the original is built once for every kernel; the builds are independent CPU work, so they
    # run in parallel (the timed runs that follow are not)
    orig = exp.original_copy()
    scratches = [orig] + [sc for _, _, sc in to_time]
    with ThreadPoolExecutor(max_workers=BUILD_WORKERS) as pool:
        built = dict(zip(map(id, scratches),
                         pool.map(lambda sc: _try(lambda: dynamic.build_program(sc, cancel)), scratches)))
    if isinstance(built[id(orig)], GpaError):
        log(f"not timed: the original does not build ({built[id(orig)].message})")
        return out
    for kernel, items in by_kernel.items():
        programs = [(orig, built[id(orig)])]
        kept = []
        for key, v, sc in items:
            exe = built[id(sc)]
            if isinstance(exe, GpaError):
                out[key] = dataclasses.replace(v, status="no_build", note=exe.message[-300:])
            else:
                programs.append((sc, exe))
                kept.append((key, v))
        log(f"timing {kernel[:60]}: original and {len(kept)} variant(s), {options.pairs} rounds ...")
        timed = dynamic.time_programs(programs, kernel, pairs=options.pairs, cancel=cancel, log=log,
                                      deadline=deadline)
        base = timed[0]
        for (key, v), t in zip(kept, timed[1:]):
            n = min(len(base.runs), len(t.runs))
            if n < 2:
                why = t.failure or base.failure or "too few runs"
                out[key] = dataclasses.replace(v, note=f"not timed: {why}")
                continue
            r = timing.compare(base.runs[:n], t.runs[:n])
            dev = t.device or base.device
            out[key] = dataclasses.replace(v, status="measured", speedup=round(r.median, 4), low=round(r.low, 4),
                                           high=round(r.high, 4), pairs=r.pairs, device=dev,
                                           original_ns=tuple(base.runs[:n]), variant_ns=tuple(t.runs[:n]))
            log(f"  {out[key].summary(short_device(dev))}")
    return out


def with_stored(config: Config | None, bundle_path: str, report: Report) -> Report:
    """The report with the results stored in the bundle for the current sources (a replay: nothing
    is built). Only advice whose fix still plans to the same experiment gets its stored result."""
    stored = store.read(bundle_path)
    if not stored:
        return report
    device = str(report.device.get("name", "")) if isinstance(report.device, dict) else ""
    flags0 = tuple(config.build.nvcc_flags) if config is not None else ()
    results = {}
    for k in report.kernels:
        for a in k.advice:
            if a.fix is None:
                continue
            plan = _plan(a)
            if plan is None:
                continue
            before = {f: _read(f) or "" for f in sorted({e.file for e in plan.edits})}
            key = store.experiment_key(before, to_json(a.fix), flags0 + tuple(plan.nvcc_flags))
            v = store.lookup(stored, key, device)
            if v is not None:
                results[(k.name, a.optimizer)] = dataclasses.replace(v, estimated=a.estimated_speedup)
    return attach(report, results)


def advise(bundle: str, config: Config | None = None) -> Report:
    """The advisor's report for a bundle with the verification results stored in it (a replay)."""
    report = advise_bundle(bundle, config=config)
    try:
        return with_stored(config, bundle, report)
    except GpaError:
        return report       # stored results are extras: the advice stands without them


def verify_in_editor(config: Config, bundle: str, report: Report, *, cancel: threading.Event | None = None,
                     dynamic: bool = False, store: bool = False, store_path: str | None = None,
                     progress: Callable[[int, int, str], None] = lambda i, n, what: None) -> Report:
    """The language server's verification phase ([verify] top, budget_s, pairs). ``store``: into the
    bundle (one gpa collected); else ``store_path`` (the folder's cache), so a save that changed
    nothing the fixes touch builds nothing again."""
    opts = Options(top=config.verify.top, dynamic=dynamic, pairs=config.verify.pairs,
                   budget_s=config.verify.budget_s, store=store or store_path is not None,
                   store_path=None if store else store_path)
    got, _ = verify_report(config, bundle, report, opts, cancel=cancel, progress=progress)
    return got
