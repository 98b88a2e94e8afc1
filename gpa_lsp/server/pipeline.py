"""build -> profile -> analyse for one workspace folder, off the event loop.

``execute`` is the whole run as one synchronous function of plain data
(config, trust, a cancel event); it runs in a worker thread and only calls
the domain (``gpa_lsp.build``, ``gpa_lsp.profile``, ``gpa_lsp.analysis``).
Its result is an :class:`Outcome`, whose ``mode`` says what kind of run it
was (profiled, or which replay). The asyncio side (debounce, one run per
folder, cancelling) is :mod:`runs`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal, get_args

from ..analysis.model import Report
from ..config import Config
from ..errors import BuildError, BundleError, GpaError, HarnessError, ProfilingError
from ..build import build as build_project
from ..profile.collect import add_throughput, built_output, cached_throughput, collect_result
from ..profile.gpu_check import gpu_present
from .cache import ResultCache, result_key, source_hashes
from .worker import AnalysisWorker, Cancelled, run_here

__all__ = ["Cancelled", "CompilerDiagnostic", "Outcome", "RunMode", "Stages", "cached_outcome", "execute"]


@dataclass(frozen=True)
class CompilerDiagnostic:
    """One nvcc message (plain copy of gpa_lsp.build.CompilerMessage)."""

    file: str | None         # None: no location (ptxas, the linker)
    line: int
    column: int
    severity: str
    text: str


RunMode = Literal["profiled", "recorded", "untrusted", "replay", "no_gpu"]
"""What a run showed: ``profiled``, a fresh collection (or a run that failed before showing
anything); else the recorded bundle, because ``recorded``: a folder's start (no run asked for
yet), ``untrusted``: the folder is not trusted, ``replay``: ``[profile] collector = "replay"``,
``no_gpu``: no GPU on this machine. Only a ``profiled`` outcome measured anything."""
RUN_MODES: tuple[str, ...] = get_args(RunMode)


@dataclass(frozen=True)
class Outcome:
    report: Report | None = None
    error: GpaError | None = None
    compiler: tuple[CompilerDiagnostic, ...] = ()
    note: str = ""                       # e.g. "no GPU here: replayed recorded/cupti.gpabundle"
    from_cache: bool = False             # shown from the disk cache, not computed in this run
    stale: bool = False                  # the sources changed since this result was computed
    hashes: dict[str, str] = field(default_factory=dict)
    cancelled: bool = False
    bundle: str | None = None
    phase: str = ""                      # a partial outcome: the phase still running ("measuring", "verifying")
    mode: RunMode = "profiled"

    @property
    def measured(self) -> bool:
        """A fresh profile of this run (not a recorded bundle shown again)."""
        return self.mode == "profiled"


@dataclass
class Stages:
    """The domain functions a run calls (a test replaces some); None: the real one. The analysis
    (advise, verify) runs in the folder's worker process (worker.py)."""

    build: Callable[..., Any] | None = None
    collect: Callable[..., Any] | None = None
    advise: Callable[..., Any] | None = None
    measure: Callable[..., Any] | None = None     # (config, bundle, cancel=) -> None | note
    cached: Callable[..., Any] | None = None      # (config, bundle) -> bool: unit throughput from the cache
    # (config, bundle, report, cancel=, dynamic=, store=, progress=) -> Report
    verify: Callable[..., Any] | None = None
    has_gpu: Callable[[], bool] = gpu_present      # profile/gpu_check.py: cheap, no driver call

    def do_build(self, config: Config, cancel: threading.Event) -> Any:
        return (self.build or build_project)(config, cancel=cancel)

    def do_collect(self, config: Config, cancel: threading.Event, out: Path) -> Any:
        # the unit-throughput pass is a second harness run (CUPTI's counters run, else ncu;
        # ``[profile] throughput_collector``): never before the sampled
        # advice is shown; ``execute`` runs it afterwards (do_measure) when the config asks
        config = replace(config, profile=replace(config.profile, throughput=False))
        if self.collect is None:   # the pipeline has just built: profile without building a second time
            return collect_result(config, cancel=cancel, out=out, build=False).path
        return self.collect(config, cancel=cancel, out=out)

    def do_measure(self, config: Config, bundle: str, cancel: threading.Event) -> str | None:
        return (self.measure or add_throughput)(config, bundle, cancel=cancel)

    def do_cached(self, config: Config, bundle: str) -> bool:
        """Unit throughput from the throughput cache alone (profile/cupti/throughput_cache.py): True
        when it covered every kernel to measure (the bundle rewritten), so no second phase runs."""
        return bool((self.cached or cached_throughput)(config, bundle))

    def do_verify(self, config: Config, bundle: str, report: Report, cancel: threading.Event, *,
                  dynamic: bool, store: bool, store_path: str | None,
                  progress: Callable[[int, int, str], None], worker: AnalysisWorker | None = None) -> Report:
        """The fixes tried (``verify.runner.verify_in_editor``): by the folder's worker, else here."""
        if self.verify is not None:
            return self.verify(config, bundle, report, cancel=cancel, dynamic=dynamic, store=store,
                               store_path=store_path, progress=progress)
        if worker is not None:
            return worker.verify(config, bundle, report, cancel, dynamic=dynamic, store=store,
                                 store_path=store_path, progress=progress)
        return run_here("verify", config, bundle, report, dynamic, store, store_path, cancel=cancel,
                        progress=progress)

    def do_preload(self, config: Config, worker: AnalysisWorker | None) -> None:
        """The folder's worker loads the built program's cubins while the harness runs (the
        analysis that follows then skips nvdisasm: ``sass.program.preload``). Only for the real
        analysis in a worker process; a test's ``advise`` needs none."""
        if worker is None or self.advise is not None:
            return
        built = built_output(config)
        if built is not None and Path(built).is_file():
            worker.preload(built)

    def do_advise(self, bundle: str, config: Config, cancel: threading.Event | None = None,
                  worker: AnalysisWorker | None = None) -> Report:
        """The analysis of ``bundle``: by the folder's worker process (worker.py), else here."""
        if self.advise is not None:
            return self.advise(bundle, config=config)
        if worker is not None:
            return worker.advise(bundle, config, cancel)
        return run_here("advise", bundle, config, cancel=cancel)


def _check(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise Cancelled()


def _has_build(config: Config) -> bool:
    return bool(config.build.command or config.build.sources)


def cached_outcome(config: Config, cache: ResultCache) -> Outcome | None:
    """What to show before (or instead of) a run: the cached result for these sources, else the latest one."""
    try:
        return _cached_outcome(config, cache)
    except Exception:  # noqa: BLE001 - a cache is an optimisation: never stop a folder from starting
        logging.getLogger("gpa_lsp.server").warning("reading the result cache failed", exc_info=True)
        return None


def _cached_outcome(config: Config, cache: ResultCache) -> Outcome | None:
    hashes = source_hashes(config.root)
    hit = cache.lookup(result_key(hashes, config))
    if hit:
        report, entry = hit
        return Outcome(report=report, note=entry.get("note", ""), from_cache=True, hashes=entry.get("hashes", {}),
                       mode=_mode(entry.get("mode")))
    latest = cache.latest()
    if latest:
        report, entry = latest
        return Outcome(report=report, note="sources changed since this earlier run", from_cache=True, stale=True,
                       hashes=entry.get("hashes", {}), mode=_mode(entry.get("mode")))
    return None


def _mode(value: Any) -> RunMode:
    """A mode read back from the cache (an entry written before modes were kept: ``profiled``)."""
    return value if value in RUN_MODES else "profiled"


def execute(config: Config, *, trusted: bool, cancel: threading.Event, cache: ResultCache,
            stages: Stages, on_stage: Callable[[str, str], None] = lambda s, m: None,
            profile: bool = True, on_partial: Callable[[Outcome], None] | None = None,
            worker: AnalysisWorker | None = None) -> Outcome:
    """One run. Returns an Outcome; GpaErrors become ``Outcome.error``, never escape.

    ``profile=False`` only replays the configured bundle (what a fresh start shows). After a fresh
    CUPTI collection, when ``[profile] throughput`` and ``[server] throughput_on_save``, the sampled
    advice goes out first (``on_partial``) and the unit-throughput pass follows, its bounded
    advice being the run's result: the pass costs a second harness run (CUPTI's counters run, or
    ncu where CUPTI cannot: ``[profile] throughput_collector``). When the throughput cache holds
    every kernel to measure (their code, launch and harness unchanged: ``Stages.do_cached``) the
    bundle takes those figures before the first analysis, and the bounded advice is the only one.
    """
    hashes = source_hashes(config.root)
    key = result_key(hashes, config)
    note = ""
    mode: RunMode = "profiled"
    bundle: str | None = None
    collected = False
    try:
        replay_only = not trusted or config.profile.collector == "replay" or not profile
        if not profile:
            mode = "recorded"
            note = "recorded bundle (save a source or run Profile now to profile)" if trusted else ""
        if not trusted:
            mode = "untrusted"
            note = "untrusted folder: showing the recorded bundle; nothing was built or run"
        elif config.profile.collector == "replay":
            mode = "replay"
            note = "collector = replay: showing the recorded bundle"
        if not replay_only and _has_build(config):
            on_stage("building", "nvcc")
            result = stages.do_build(config, cancel)
            _check(cancel)
            if not getattr(result, "ok", False):
                compiler = tuple(CompilerDiagnostic(m.file, int(m.line or 0), int(m.column or 0),
                                                    str(m.severity), m.text)
                                 for m in getattr(result, "messages", ()))
                output = getattr(result, "log", "") or ""
                first = next((c for c in compiler if c.severity == "error"), compiler[0] if compiler else None)
                return Outcome(error=BuildError("the build failed" + (f": {first.text}" if first else ""),
                                                "fix the errors shown in the sources", output=output),
                               compiler=compiler, hashes=hashes)
        if not replay_only:
            if stages.has_gpu() or not config.bundle_path:
                stages.do_preload(config, worker)
                on_stage("profiling", config.profile.collector)
                out = cache.bundle_dir() / f"{key}.gpabundle"
                bundle = str(stages.do_collect(config, cancel, out))
                collected = True
            else:
                mode = "no_gpu"
                note = f"no GPU on this machine: replayed the recorded bundle {Path(config.bundle_path).name}"
        if bundle is None:
            if not config.bundle_path:
                hint = ("set [profile] bundle in gpa.toml to show recorded results" if trusted else
                        "trust the workspace to profile it, or set [profile] bundle to a recorded bundle")
                raise BundleError("no recorded bundle is configured", hint)
            if not Path(config.bundle_path).is_file():
                raise BundleError(f"the recorded bundle {config.bundle_path} does not exist",
                                  "record one with `gpa profile` on a GPU machine, or fix [profile] bundle")
            bundle = config.bundle_path
        _check(cancel)
        two_phase = collected and config.profile.collector == "cupti" and config.profile.throughput \
            and config.server.throughput_on_save
        if two_phase and stages.do_cached(config, bundle):
            two_phase = False        # the hot kernels did not change: their kept unit throughput, one phase
        on_stage("analysing", Path(bundle).name)
        report = stages.do_advise(bundle, config, cancel, worker)
        _check(cancel)
        note = _join(note, *getattr(report, "problems", ()))   # a kernel skipped (a damaged cubin): say so, show the rest
        if two_phase:
            if on_partial is not None:
                on_partial(Outcome(report=report, note=_join(note, "measuring unit throughput ..."),
                                   hashes=hashes, bundle=bundle, mode=mode))
            on_stage("measuring", "unit throughput")
            why_not = stages.do_measure(config, bundle, cancel)
            _check(cancel)
            if why_not:
                note = _join(note, why_not)
            else:
                report = stages.do_advise(bundle, config, cancel, worker)
                _check(cancel)
        if trusted and profile and config.verify.on_save and config.verify.top > 0 and _has_build(config) \
                and any(a.fix is not None for k in report.kernels for a in k.advice):
            # try the top fixes: compiled and compared (and timed with a GPU) in scratch copies. A
            # bundle gpa collected keeps the results; the user's recorded bundle is never rewritten
            if on_partial is not None:
                on_partial(Outcome(report=report, note=_join(note, "verifying fixes ..."), hashes=hashes,
                                   bundle=bundle, phase="verifying", mode=mode))
            on_stage("verifying", f"top {config.verify.top} fixes")
            try:
                report = stages.do_verify(config, bundle, report, cancel, dynamic=collected and stages.has_gpu(),
                                          store=collected, store_path=str(cache.dir / "verification.json"),
                                          progress=lambda i, n, what: on_stage("verifying", f"{i}/{n}: {what}"),
                                          worker=worker)
            except Cancelled:
                raise
            except GpaError as exc:
                note = _join(note, f"fixes not verified: {exc.message}")
            _check(cancel)
        cache.store(key, report, hashes, note, mode)
        return Outcome(report=report, note=note, hashes=hashes, bundle=bundle, mode=mode)
    except Cancelled:
        return Outcome(cancelled=True, hashes=hashes)
    except (HarnessError, ProfilingError, BuildError) as exc:
        if cancel.is_set():
            return Outcome(cancelled=True, hashes=hashes)
        return Outcome(error=exc, hashes=hashes, note=note, mode=mode)
    except GpaError as exc:
        return Outcome(error=exc, hashes=hashes, note=note, mode=mode)
    except Exception as exc:  # noqa: BLE001 - a bug in a stage must not kill the server
        if cancel.is_set():
            return Outcome(cancelled=True, hashes=hashes)
        logging.getLogger("gpa_lsp.server").exception("internal error during the run")   # the trace: server log
        err = GpaError(f"internal error during the run: {type(exc).__name__}: {exc}",
                       "please report this with the server log (the editor's gpa-lsp output)")
        return Outcome(error=err, hashes=hashes, note=note, mode=mode)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)
