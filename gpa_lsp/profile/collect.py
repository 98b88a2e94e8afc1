"""Build, run the harness under a collector, write the bundle: the one entry point for `gpa profile`
and the language server (which calls :func:`collect` off its event loop).

Standard library only (+ cuda-bindings for the device limits): this runs on the GPU machine.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..build import build as build_project, build_cubins, nvcc_argv, output_path
from ..config import Config
from ..errors import GpaError, HarnessError, ProfilingError
from ..toolchain import find_tool
from . import harness
from . import throughput as throughput_mod
from .cupti import OUTPUT
from .cupti import counters as counters_mod
from .cupti import sample_volume
from .cupti.builder import find_cupti, injection_library
from .gpu_check import explain_failure, require_gpu
from .late_imports import LATE
from .throughput import parse_raw_csv, summarise
from .timing import Marks, enabled as timing_enabled, process_age

if TYPE_CHECKING:
    from .model import Profile


@dataclass
class CollectResult:
    path: Path
    profile: Profile
    collector: str
    wall_s: float
    notes: list[str] = field(default_factory=list)
    launches_seen: dict[str, int] = field(default_factory=dict)
    cubins: dict[str, bytes] | None = None   # the bundle's, when the collector kept them (no re-read)

    def summary(self) -> str:
        p = self.profile
        lines = [f"{self.collector}: {len(p.kernels)} kernel(s), {p.total_samples} samples"
                 f" ({p.dropped_samples} dropped), {len(p.pcs)} PCs, harness {self.wall_s:.2f} s -> {self.path}"]
        for k in p.kernels:
            n = sum(s.total for s in p.pcs if s.function == k.name)
            lines.append(f"  {k.demangled[:70]:70s} launches {len(k.launches):4d}  samples {n}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _harness_parts(config: Config, build_output: str | None):
    h = config.harness
    command = h.command
    if command is None:
        if not build_output:
            raise HarnessError("no harness to run: [harness] command is not set",
                               "set [harness] command = [\"build/app\"] in gpa.toml")
        command = (build_output,)
    cwd = config.resolve(h.cwd) if h.cwd else config.root
    return command, cwd, dict(h.env)


def _default_out(config: Config, collector: str) -> Path:
    return Path(config.resolve(f".gpa/{collector}.gpabundle"))


def _build(config: Config, cancel, log) -> str | None:
    if config.build.command is None and not config.build.sources:
        return None
    log("building ...")
    res = build_project(config, cancel).check()
    return res.output


def built_output(config: Config) -> str | None:
    """Where ``[build]`` puts the program, built now or earlier: ``[build] output`` (also for a
    build command: make, CMake), else the default of a build from ``[build] sources``."""
    if config.build.output:
        return config.resolve(config.build.output)
    if not config.build.sources:
        return None
    return output_path(config)


_SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl", ".cpp", ".cc")
_NOT_SOURCE_DIRS = {"build", "node_modules", "__pycache__", "recorded", "venv"}


def _tree_sources(root: str, limit: int = 500, max_dirs: int = 2000) -> list[Path]:
    """The CUDA and C++ sources under a project folder (a build command names none): recorded in
    the manifest so the advice finds them again where the project is checked out elsewhere."""
    out: list[Path] = []
    for n, (dirpath, dirnames, filenames) in enumerate(os.walk(root)):
        if n >= max_dirs:
            break
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _NOT_SOURCE_DIRS
                             and not d.startswith("cmake-build"))
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(_SOURCE_SUFFIXES)]
        if len(out) >= limit:
            return out[:limit]
    return out


def _sources(config: Config) -> list[dict]:
    """[build] sources, then the other sources of the project's tree: a harness may compile some
    at run time (NVRTC reads a .cu file that no build names)."""
    named = [config.resolve(s) for s in config.build.sources]
    rest = [str(p.resolve()) for p in _tree_sources(config.root)]
    LATE.wait()
    from .bundle import source_records
    return source_records(named + [p for p in rest if p not in set(named)], config.root)


# the shortest sampling period tried when a run brings too few samples: below 2^7 cycles the
# hardware buffer drains more often than CUPTI reads it on busy kernels (samples dropped)
MIN_AUTO_PERIOD = 7
MAX_DROPPED = 0.05


def hw_buffer_bytes(period: int) -> int:
    """CUPTI's hardware sample buffer for a sampling period (2^period cycles).

    CUPTI's default is 512 MB, allocated on the device when sampling is enabled: start-up time
    for every run. Samples arrive at a rate proportional to 1 / 2^period, so the buffer that holds
    the same stretch of sampling halves with each step above 2^12 (where 512 MB held on the
    long harness), down to 64 MB from 2^15 upward; at 2^12 and below CUPTI's default stays: there a
    smaller one saved 0.2 s on short harnesses but filled on long_1s and lost 87% of its samples
    (benchmarks/profiling/README.md, hw_buffer.h100.json).
    ``GPA_CUPTI_HW_BYTES`` in the environment of ``gpa`` (one setting for every project: what
    benchmarks/profiling/bench_hw_buffer.py varies) or in ``[harness] env`` (wins) overrides it.
    """
    return max(64 << 20, (512 << 20) >> max(0, period - 12))


def hw_buffer_override() -> int | None:
    """``GPA_CUPTI_HW_BYTES`` from gpa's own environment, in bytes; None when unset or empty."""
    raw = os.environ.get("GPA_CUPTI_HW_BYTES", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ProfilingError(f"GPA_CUPTI_HW_BYTES={raw!r} is not a size in bytes",
                             "set it to a positive whole number of bytes (67108864 for 64 MB), or unset it")
    return int(raw)


def _injection_env(lib, cupti, tmp: str, env: dict[str, str]) -> dict[str, str]:
    env = dict(env)
    env.update({"CUDA_INJECTION64_PATH": str(lib), "GPA_CUPTI_OUT": tmp})
    # the injected CUPTI must be the one the library was linked with
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(cupti.libdir), os.environ.get("LD_LIBRARY_PATH", "")) if p)
    if timing_enabled():
        env.setdefault("GPA_CUPTI_TIMING", "1")
    return env


def sampling_env(config: Config, period: int, hw_bytes: int | None = None) -> dict[str, str]:
    """The injection library's settings for a sampling run (over the harness's own env);
    ``hw_bytes``: the hardware buffer sized from the previous run (sample_volume.py)."""
    hw = hw_buffer_override() or hw_bytes or hw_buffer_bytes(period)
    out = {"GPA_CUPTI_SAMPLING_PERIOD": str(period), "GPA_CUPTI_HW_BYTES": str(hw)}
    kernels = config.profile.kernels
    if kernels and len(kernels) <= counters_mod.MAX_KERNEL_NAMES:
        out["GPA_CUPTI_KERNELS"] = counters_mod.kernel_filter(kernels)   # other kernels run unsampled
    return out


class Prepared:
    """What the bundle holds beside the sampling run's own records, made for one ``run``: its
    profile with unit throughput (when measured), the notes and manifest section that go with it,
    the sources and the bundle staged at its path (profile and cubins written: bundle.StagedBundle).
    A plain class: a dataclass costs `gpa profile` a millisecond of import before the harness starts."""

    __slots__ = ("run", "profile", "notes", "throughput", "sources", "staged")

    def __init__(self, run, profile: Profile, notes: list[str], throughput: dict | None, sources: list[dict],
                 staged) -> None:
        self.run, self.profile, self.notes, self.throughput = run, profile, notes, throughput
        self.sources, self.staged = sources, staged

    def discard(self) -> None:
        self.staged.discard()


def _discard(prepared: Prepared | None) -> None:
    if prepared is not None:
        prepared.discard()


def _read_early(tmp: str, done, config: Config, marks: Marks, ahead):
    """The run's output read through END while the harness is still ending (done_signal.py), and
    what ``ahead`` makes of it: (text read, run, Prepared or None); None when there is nothing to
    read early (the output is then read after the exit, with the harness's output for its errors)."""
    from .cupti import done_signal
    end = done.flushed_bytes()
    text = done_signal.flushed_text(tmp, end) if end is not None else None
    if text is None:
        return None
    LATE.wait()
    from .cupti.reader import read_output
    try:
        run = read_output(tmp, kernels=config.profile.kernels, text=text)
    except GpaError:
        return None
    marks("read samples")
    try:
        prepared = ahead(run)
    except (GpaError, OSError):
        prepared = None          # made again after the exit, where its error is reported
    return text, run, prepared


def _cupti_once(config: Config, period: int, lib, cupti, command, cwd, env, cancel, log, marks=None,
                hw_bytes: int | None = None, ahead=None):
    """One sampling run: (harness result, the library's output read, Prepared or None). With
    ``ahead`` (run -> Prepared or None) the library signals its last record (done_signal.py) and
    the output is read and ``ahead`` called while the process is still ending; the exit status
    is waited for all the same (a harness that fails then fails the run, and what was prepared
    is discarded), and what was read is kept only if the output did not change after it."""
    marks = marks or Marks()
    from .cupti import done_signal
    with tempfile.TemporaryDirectory(prefix="gpa-cupti-") as tmp:
        env = {**sampling_env(config, period, hw_bytes), **dict(env)}   # [harness] env wins (GPA_CUPTI_HW_BYTES...)
        env = _injection_env(lib, cupti, tmp, env)
        done = done_signal.DoneSignal.open_in(tmp) if ahead is not None else None
        if done is not None:
            env.update(done.env())
        log(f"running the harness under CUPTI PC sampling (period 2^{period} cycles, hardware buffer "
            f"{int(env['GPA_CUPTI_HW_BYTES']) >> 20} MB) ...")
        LATE.start()      # what reads the output and writes the bundle, imported while the harness runs
        early = None
        try:
            with harness.start(command, cwd=cwd, env=env, timeout=config.harness.timeout, cancel=cancel) as running:
                if done is not None and running.wait_for(done.fd):
                    marks("sampling output flushed")
                    early = _read_early(tmp, done, config, marks, ahead)
                word = done.word() if early is not None and early[2] is not None else None
                if word is not None and word[2] == 0 and running.leads(word[0]):
                    # the harness's own program exited 0 with its output complete: its teardown
                    # is not waited for (done_signal.py)
                    res = running.end_early(0)
                    ended_early = True
                else:
                    res = running.finish()
                    ended_early = False
        except BaseException:
            if early is not None:
                _discard(early[2])
            raise
        finally:
            if done is not None:
                done.close()
        marks("sampling run")
        if os.environ.get("GPA_KEEP_CUPTI_OUT"):
            keep = Path(os.environ["GPA_KEEP_CUPTI_OUT"])
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(tmp) / OUTPUT, keep / OUTPUT) if (Path(tmp) / OUTPUT).exists() else None
        run, prepared = None, None
        if early is not None:
            after = [] if ended_early else done_signal.unchanged(tmp, early[0])
            if after is None:
                _discard(early[2])
                log("the CUPTI output changed after its END record (a second CUDA process in the harness?): "
                    "read again")
            else:
                run, prepared = early[1], early[2]
                run.marks += after
        if run is None:
            LATE.wait()
            from .cupti.reader import read_output
            run = read_output(tmp, kernels=config.profile.kernels, output_tail=res.output_tail)
            marks("read samples")
        marks.library_marks(run.marks)
    run.hw_bytes = int(env["GPA_CUPTI_HW_BYTES"])
    run.filled_at = 0
    return res, run, prepared


def _sampled(config: Config, period: int, lib, cupti, command, cwd, env, cancel, log, marks, volume, ahead=None):
    """One sampling run with the hardware buffer sized from the previous run of this harness
    (sample_volume.py) where gpa's and the harness's environment leave it to gpa, run again at the
    period's size when that buffer filled (or brought nothing): samples are never lost to the
    saving. Returns (res, run, note or None, Prepared or None: ``ahead``'s, see _cupti_once)."""
    cache, key = volume
    hw = None
    if hw_buffer_override() is None and "GPA_CUPTI_HW_BYTES" not in env:
        hw = sample_volume.sized(sample_volume.previous(cache, key), period, hw_buffer_bytes(period))
    final = None if ahead is None else (lambda r: None if r.hardware_buffer_full else ahead(r))  # full: run again
    note, filled = None, False
    if hw is not None:
        try:
            res, run, prepared = _cupti_once(config, period, lib, cupti, command, cwd, env, cancel, log, marks,
                                             hw_bytes=hw, ahead=final)
            if not run.hardware_buffer_full:
                return res, run, None, prepared
            _discard(prepared)
            why, filled = f"filled up {run.hardware_buffer_full} time(s)", True
        except ProfilingError as exc:     # no samples at all: not the buffer's doing, most likely; make sure
            why = f"brought no samples ({exc.message})"
        note = (f"the hardware buffer sized from this harness's last run ({hw >> 20} MB) {why}: sampled again "
                f"with {hw_buffer_bytes(period) >> 20} MB")
        log(note)
    res, run, prepared = _cupti_once(config, period, lib, cupti, command, cwd, env, cancel, log, marks, ahead=final)
    # only a buffer that filled is kept from this harness: a run that failed otherwise (a CUPTI error)
    # says nothing about the buffer (on the H100 such failures had pushed probe from 128 to 512 MB)
    run.filled_at = hw if filled else 0
    return res, run, note, prepared


def hot_kernel_samples(profile: Profile) -> int:
    """Samples of the kernel that has the most (the one whose advice leads)."""
    per: dict[str, int] = {}
    for pc in profile.pcs:
        per[pc.function] = per.get(pc.function, 0) + pc.total
    return max(per.values(), default=0)


def shorter_period(period: int, samples: int, want: int) -> int | None:
    """The period that should bring ``want`` samples where ``period`` brought ``samples`` (samples
    scale with 1 / period), not below MIN_AUTO_PERIOD; None when no shorter period would help."""
    if want <= 0 or samples >= want or period <= MIN_AUTO_PERIOD:
        return None
    factor = want / max(samples, 1)
    new = max(MIN_AUTO_PERIOD, period - math.ceil(math.log2(factor)))
    return new if new < period else None


def _sampling(config: Config, lib, cupti, command, cwd, env, cancel, log, marks, volume, ahead=None):
    """The sampling run, once more at a shorter period when it brought too few samples.
    Returns (res, run, period, hardware buffer note, period note, Prepared or None: ``ahead``'s
    for the run returned, see _cupti_once)."""
    period = config.profile.sampling_period
    want = config.profile.min_samples

    def first(run):       # not for a run that brought too few samples: it is run again
        if shorter_period(period, hot_kernel_samples(run.profile), want) is not None:
            return None
        return ahead(run)

    res, run, buffer_note, prepared = _sampled(config, period, lib, cupti, command, cwd, env, cancel, log, marks,
                                               volume, first if ahead is not None else None)
    period_note = ""
    # too few samples for the advice to be sure (a short harness): sample more often, once
    got = hot_kernel_samples(run.profile)
    new = shorter_period(period, got, want)
    if new is not None:
        _discard(prepared)
        prepared = None
        log(f"{got} samples on the hottest kernel (fewer than {want}): sampling again at 2^{new}")
        res2, run2, note2, prepared2 = _sampled(config, new, lib, cupti, command, cwd, env, cancel, log, marks,
                                                volume, ahead)
        total2 = run2.profile.total_samples or 1
        got2 = hot_kernel_samples(run2.profile)
        if run2.profile.dropped_samples / total2 <= MAX_DROPPED and got2 > got:
            period_note = f"sampling period 2^{new} (2^{period} brought {got} samples on the hottest kernel)"
            res, run, period, buffer_note, prepared = res2, run2, new, note2, prepared2
        else:
            _discard(prepared2)
            period_note = (f"kept sampling period 2^{period} ({got} samples): 2^{new} dropped "
                           f"{run2.profile.dropped_samples} of {total2} samples")
    return res, run, period, buffer_note, period_note, prepared


def collect_cupti(config: Config, out: Path, *, cancel=None, log=print, build_output=None) -> CollectResult:
    marks = Marks(log)
    cupti = find_cupti()
    lib = injection_library(cupti)
    marks("injection library")
    command, cwd, env = _harness_parts(config, build_output)
    # [harness] env may size CUPTI's buffers: GPA_CUPTI_HW_BYTES (hardware buffer, hw_buffer_bytes),
    # GPA_CUPTI_SCRATCH_BYTES, GPA_CUPTI_DRAIN_MS (periodic drain, default 100; 0 = at launch exits only),
    # GPA_CUPTI_WORKER_SLEEP_MS (CUPTI's decoding threads, default 100)
    volume = (Path(config.resolve(".gpa")) / sample_volume.FILE,
              sample_volume.harness_key(command, cwd, env, config.profile.kernels))

    def ahead(run) -> Prepared | None:     # while the sampled process ends: no harness run in it
        return _prepare(config, run, out, build_output, cancel=cancel, log=log, marks=marks, cache_only=True)

    res, run, period, buffer_note, period_note, prepared = _sampling(config, lib, cupti, command, cwd, env, cancel,
                                                                     log, marks, volume, ahead)
    if prepared is None or prepared.run is not run:
        _discard(prepared)
        prepared = _prepare(config, run, out, build_output, cancel=cancel, log=log, marks=marks, cache_only=False)
    LATE.wait()
    from .bundle import make_manifest
    try:
        manifest = make_manifest(collector="cupti", build_command=_build_cmd(config), harness_command=command,
                                 sources=prepared.sources,
                                 extra={"cupti": {"api_version": run.cupti_version, "library": str(cupti.library),
                                                  "origin": cupti.origin, "complete": run.complete,
                                                  "hardware_buffer_full": run.hardware_buffer_full,
                                                  "hardware_buffer_bytes": run.hw_bytes,
                                                  "hardware_buffer_note": buffer_note,
                                                  "format": run.format, "kernel_records": run.kernel_records,
                                                  "activity_dropped": run.activity_dropped,
                                                  "sampled_contexts": list(run.contexts),
                                                  "drains": {c: list(d) for c, d in run.drains.items()}},
                                        "harness_wall_s": round(res.wall_s, 3)})
        if prepared.throughput is not None:
            manifest["throughput"] = prepared.throughput
        sample_volume.remember(volume[0], volume[1], period=period, samples=run.profile.total_samples,
                               hw_bytes=run.hw_bytes, full=bool(run.hardware_buffer_full), filled_at=run.filled_at)
        prepared.staged.finish(manifest)
    except BaseException:
        prepared.discard()
        raise
    marks("bundle written")
    notes = list(run.errors) + [n for n in (buffer_note, period_note) if n] + prepared.notes
    if not run.complete:
        notes.append("the harness ended before CUPTI's last flush (no END record); late samples may be missing")
    return CollectResult(out, prepared.profile, "cupti", res.wall_s, notes, run.launches_seen, run.cubins)


def _prepare(config: Config, run, out: Path, build_output: str | None, *, cancel, log, marks: Marks,
             cache_only: bool) -> Prepared | None:
    """The sampling run's unit throughput (the throughput pass), sources and staged bundle. With
    ``cache_only`` (called while the sampled process is still ending) None when the throughput
    pass would run the harness again: that waits for the process's end (collect_cupti)."""
    profile, notes, section = run.profile, [], None
    if config.profile.throughput:
        from_cache: dict[str, str] = {}
        got = throughput_pass(config, profile, build_output, cancel=cancel, log=log, with_collector=True,
                              cubins=run.cubins, from_cache=from_cache, cache_only=cache_only)
        if got is None:
            return None
        profile, note, by = got
        marks("throughput pass")
        section = _throughput_manifest(config, profile, note, by, from_cache)
        notes += [n for n in (note, section["unmeasured"]) if n]
    sources = _sources(config)
    LATE.wait()
    from .bundle import StagedBundle
    staged = StagedBundle(out, profile, run.cubins)
    marks("bundle staged")
    return Prepared(run, profile, notes, section, sources, staged)


def attach_throughput(profile: Profile, rows: list[tuple[str, dict[str, float]]], clocks: str) -> Profile:
    """Kernels of ``profile`` with the unit throughput of their launches in ``rows`` (ncu's raw page)."""
    LATE.wait()
    from .demangle import base_name
    per: dict[str, list[dict[str, float]]] = {}
    for name, vals in rows:
        exact = [k for k in profile.kernels if k.name == name]
        match = exact or [k for k in profile.kernels if base_name(k.demangled) == base_name(name)]
        if len(match) == 1:
            per.setdefault(match[0].name, []).append(vals)
    kernels = tuple(replace(k, throughput=summarise(per[k.name], clocks)) if k.name in per else k
                    for k in profile.kernels)
    return replace(profile, kernels=kernels)


def add_throughput(config: Config, bundle_path: str | os.PathLike, *, cancel=None, log=lambda m: None) -> str | None:
    """Measure unit throughput for a bundle recorded without it and rewrite the bundle in place.

    The language server's second phase: the sampled advice is shown first, the memory-system
    bound follows. Returns None when measured, else the note saying why not.
    """
    LATE.wait()
    from .bundle import read_bundle, write_bundle
    b = read_bundle(bundle_path)
    from_cache: dict[str, str] = {}
    profile, note, by = throughput_pass(config, b.profile, built_output(config), cancel=cancel, log=log,
                                        with_collector=True, cubins=b.cubins, from_cache=from_cache)
    if note is None:
        manifest = {**b.manifest, "throughput": _throughput_manifest(config, profile, None, by, from_cache)}
        write_bundle(Path(bundle_path), replace(b, profile=profile, manifest=manifest))
    return note


def cached_throughput(config: Config, bundle_path: str | os.PathLike) -> bool:
    """The unit throughput of a bundle collected without it, from the throughput cache alone (no
    harness run): True when every kernel the counters run would measure hits, and the bundle is
    rewritten with their figures (``manifest.throughput.from_cache``); False, the bundle untouched,
    otherwise. The language server calls it before the first analysis of a save: when the hot
    kernels did not change, the first advice it shows is already bounded and no second phase runs."""
    if config.profile.throughput_collector not in ("auto", "cupti") or not config.profile.throughput_cache:
        return False
    LATE.wait()
    from .bundle import read_bundle, write_bundle
    try:
        b = read_bundle(bundle_path)
    except (GpaError, OSError):
        return False
    sampled = _sampled_kernels(b.profile, config.profile.throughput_share)
    _, _, hits = _cache_hits(config, b.profile, sampled, built_output(config), b.cubins)
    if not sampled or set(hits) != set(sampled):
        return False
    profile = attach_throughput(b.profile, [(n, h[0]) for n, h in hits.items()], "none")
    if not any(k.throughput for k in profile.kernels):
        return False
    entry = _throughput_manifest(config, profile, None, "cupti", {n: h[1] for n, h in hits.items()})
    manifest = {**b.manifest, "throughput": entry}
    write_bundle(Path(bundle_path), replace(b, profile=profile, manifest=manifest))
    return True


def throughput_pass(config: Config, profile: Profile, build_output: str | None, *, cancel=None,
                    log=print, with_collector: bool = False, cubins: dict[str, bytes] | None = None,
                    from_cache: dict[str, str] | None = None, cache_only: bool = False):
    """Run the harness once more for unit throughput (see profile/throughput.py): under CUPTI's Range
    Profiler (``[profile] throughput_collector = "cupti"``), under ``ncu --metrics`` ("ncu"), or CUPTI
    and ncu when CUPTI could not ("auto", the default). With the profile's ``cubins`` CUPTI's
    figures of kernels measured before with the same code and launch come from the throughput
    cache (cupti/throughput_cache.py), and no run is needed when every kernel to measure hits;
    ``from_cache`` (a dict) is filled with those kernels' names and when they were measured.

    Never fails the collection: without counters or a clean run, the bundle keeps its samples and
    the note says why the estimates are not bounded by the memory system. Returns (profile, note),
    or (profile, note, who measured: "cupti", "ncu" or None) with ``with_collector``; with
    ``cache_only`` None instead of running the harness (not every kernel is in the cache).
    """
    how = config.profile.throughput_collector
    got, note, by = profile, None, None
    if cache_only and how not in ("auto", "cupti"):
        return None
    if how in ("auto", "cupti"):
        found = _throughput_cupti(config, profile, build_output, cancel=cancel, log=log, cubins=cubins,
                                  from_cache=from_cache, cache_only=cache_only)
        if found is None:
            return None
        got, note = found
        by = "cupti" if note is None else None
    if how == "ncu" or (how == "auto" and note is not None):
        if cache_only:
            return None
        first = note
        if first:
            log(f"{first}: measuring it with Nsight Compute instead")
        got, note = _throughput_ncu(config, profile, build_output, cancel=cancel, log=log)
        by = "ncu" if note is None else None
        if note and first:
            note = f"{note}; before that, with CUPTI: {first}"
    return (got, note, by) if with_collector else (got, note)


def _cache_keys(config: Config, profile: Profile, kernels: list[str], build_output: str | None,
                cubins: dict[str, bytes] | None) -> dict[str, str]:
    """{kernel: its throughput-cache key} for the kernels whose code and first launch are known."""
    LATE.wait()
    from .cupti import throughput_cache
    if not config.profile.throughput_cache or not cubins:
        return {}
    try:
        command, cwd, env = _harness_parts(config, build_output)
    except GpaError:
        return {}
    harness_key = sample_volume.harness_key(command, cwd, env, config.profile.kernels)
    by_name = {k.name: k for k in profile.kernels}
    keys = {}
    for name in kernels:
        if name in by_name and (key := throughput_cache.kernel_key(profile, by_name[name], cubins, harness_key,
                                                                   counters_mod.METRICS)):
            keys[name] = key
    return keys


def _cache_hits(config: Config, profile: Profile, kernels: list[str], build_output: str | None,
                cubins: dict[str, bytes] | None):
    """(the throughput cache file, {kernel: its key}, {kernel: (its kept figures, when measured)}):
    the keys of ``kernels`` whose code and first launch are known (``_cache_keys``), and those of
    them the cache holds, in the order of ``kernels``; one read of the file."""
    from .cupti import throughput_cache
    cache = Path(config.resolve(".gpa")) / throughput_cache.FILE
    keys = _cache_keys(config, profile, kernels, build_output, cubins)
    found = throughput_cache.lookup_many(cache, keys.values())
    return cache, keys, {name: found[key] for name, key in keys.items() if key in found}


def _throughput_manifest(config: Config, profile: Profile, note: str | None, by: str | None,
                         from_cache: dict[str, str]) -> dict:
    """The bundle manifest's ``throughput`` entry: whether any kernel has unit throughput, the note
    saying why not, who measured it ("cupti", "ncu" or None), which sampled kernels CUPTI left
    without it (``[profile] throughput_share``: ``_unmeasured_note``), and which kernels' figures
    came from the throughput cache, with when they were measured."""
    partial = _unmeasured_note(profile, config.profile.throughput_share) if by == "cupti" else None
    return {"measured": any(k.throughput for k in profile.kernels), "note": note, "collector": by,
            "unmeasured": partial, "from_cache": from_cache}


def _throughput_cupti(config: Config, profile: Profile, build_output: str | None, *, cancel=None,
                      log=print, cubins: dict[str, bytes] | None = None,
                      from_cache: dict[str, str] | None = None,
                      cache_only: bool = False) -> tuple[Profile, str | None] | None:
    """The counters run of the injection library: the sampled kernels' first launches, replayed for
    the unit metrics; the harness ends once they are measured (profile/cupti/counters.py). Kernels
    measured before with the same code and launch (``cubins`` given: cupti/throughput_cache.py)
    take the kept figures instead, and are named in ``from_cache``; when all do, nothing runs.
    ``cache_only``: None (and ``from_cache`` untouched) where a counters run would be needed."""
    LATE.wait()
    from .cupti import throughput_cache
    sampled = _sampled_kernels(profile, config.profile.throughput_share)
    if not sampled:
        return profile, "unit throughput not measured (no sampled kernel to measure)"
    cache, keys, hits = _cache_hits(config, profile, sampled, build_output, cubins)
    kept = [(name, hit[0]) for name, hit in hits.items()]
    todo = [n for n in sampled if n not in hits]
    if todo and cache_only:
        return None
    if from_cache is not None:
        from_cache.update((name, hit[1]) for name, hit in hits.items())
    if not todo:
        log(f"unit throughput of {len(kept)} kernel(s) from the throughput cache (same code, launch and harness as "
            "when measured): no counters run")
        return attach_throughput(profile, kept, "none"), None
    log(f"measuring unit throughput with CUPTI's Range Profiler ({len(todo)} kernel(s), first launch"
        f"{f'; {len(kept)} from the throughput cache' if kept else ''}) ...")
    keep = Path(os.environ["GPA_KEEP_CUPTI_OUT"]) if os.environ.get("GPA_KEEP_CUPTI_OUT") else None
    try:
        run, failed = _counters_run(config, todo, build_output, cancel, keep)
        if failed is not None:
            # each launch's record is written when it is measured: a harness that fails later (a
            # shell's next command run on what the early exit left, a crash at its end) loses none
            if cancel is not None and cancel.is_set():
                raise failed
            if not run.rows:
                raise failed
    except GpaError as exc:
        if cancel is not None and cancel.is_set():
            raise
        return profile, f"unit throughput not measured ({exc.message})"
    if timing_enabled():
        Marks(log).library_marks(run.marks)
    if not run.rows:
        return profile, f"unit throughput not measured ({counters_mod.why_not(run)})"
    got = attach_throughput(profile, kept + run.rows, "none")
    if not any(k.throughput for k in got.kernels):
        return profile, "unit throughput not measured (CUPTI measured none of the sampled kernels)"
    measured = {k.name for k in got.kernels if k.throughput is not None}
    first: dict[str, dict[str, float]] = {}
    # the first launch of each kernel: what a later run would measure. Kept once its unit shares are
    # all there (what bounds); an amount this CUPTI refuses (the library's E record) would be refused
    # again, so requiring every metric would only run the counters run on every profile
    for name, vals in run.rows:
        if name in keys and name in measured and name not in first and all(m in vals for m in counters_mod.SHARES):
            first[name] = vals
    throughput_cache.remember(cache, {keys[n]: v for n, v in first.items()})
    return got, None


def _counters_run(config: Config, kernels: list[str], build_output: str | None, cancel, keep: Path | None):
    """The counters run after the sampling run: (what the library wrote, the harness's error)."""
    cupti = find_cupti()
    lib = injection_library(cupti)
    command, cwd, env = _harness_parts(config, build_output)
    with tempfile.TemporaryDirectory(prefix="gpa-counters-") as tmp:
        env = _injection_env(lib, cupti, tmp, {**dict(env), **counters_mod.env(kernels)})
        failed = None
        try:
            harness.run(command, cwd=cwd, env=env, timeout=config.harness.timeout, cancel=cancel)
        except HarnessError as exc:
            failed = exc
        if keep is not None and (Path(tmp) / OUTPUT).exists():
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(tmp) / OUTPUT, keep / "counters.txt")
        return counters_mod.read(tmp), failed


def _unmeasured_note(profile: Profile, share: float) -> str | None:
    """Which sampled kernels were left without unit throughput (``[profile] throughput_share``)."""
    sampled = {pc.function for pc in profile.pcs if pc.total}
    left = [k for k in profile.kernels if k.name in sampled and k.throughput is None]
    if not left:
        return None
    per: dict[str, int] = {}
    for pc in profile.pcs:
        per[pc.function] = per.get(pc.function, 0) + pc.total
    held = sum(per.get(k.name, 0) for k in left) / max(1, sum(per.values()))
    names = ", ".join((k.demangled or k.name).split("(")[0] for k in left[:4]) + (" ..." if len(left) > 4 else "")
    return (f"unit throughput measured for the hottest kernels only ([profile] throughput_share = {share:g}): "
            f"{len(left)} kernel(s) with {held:.1%} of the samples ({names}) have estimates not bounded by "
            "the memory system")


def _sampled_kernels(profile: Profile, share: float = 1.0) -> list[str]:
    """The kernels with samples, most first, at most counters.MAX_KERNEL_NAMES: with ``share`` < 1
    only the hottest that together hold that share of the samples (at least the hottest one).

    Why not all of them: each kernel costs the counters run its replay passes (14 on the H100:
    0.6 s for the first launch of probe's chase; each further kernel 0.25-0.30 s with 18), and a kernel's unit
    throughput only bounds the estimates of that kernel's advice, so a kernel with a few percent
    of the samples pays a visible share of the run for advice that weighs as little."""
    per: dict[str, int] = {}
    for pc in profile.pcs:
        per[pc.function] = per.get(pc.function, 0) + pc.total
    names = sorted((n for n, c in per.items() if c > 0), key=lambda n: (-per[n], n))
    if not names:
        return [k.name for k in profile.kernels][:counters_mod.MAX_KERNEL_NAMES]
    total, out, held = sum(per[n] for n in names), [], 0
    for n in names[:counters_mod.MAX_KERNEL_NAMES]:
        if out and held >= share * total:
            break
        out.append(n)
        held += per[n]
    return out


def _throughput_ncu(config: Config, profile: Profile, build_output: str | None, *, cancel=None,
                    log=print) -> tuple[Profile, str | None]:
    """The harness under ``ncu --metrics`` (the fallback)."""
    LATE.wait()
    from . import ncu as ncu_mod
    try:
        ncu = find_tool("ncu", config.profile.ncu)
        command, cwd, env = _harness_parts(config, build_output)
        with tempfile.TemporaryDirectory(prefix="gpa-sol-") as tmp:
            report = Path(tmp) / "sol"
            wrapper = [ncu, *ncu_mod.throughput_argv(config.profile.kernels, config.profile.launch_count), "-f", "-o", str(report)]
            log("measuring unit throughput with Nsight Compute (one metrics pass) ...")
            res = harness.run(command, cwd=cwd, env=env, timeout=config.harness.timeout, cancel=cancel, wrapper=wrapper)
            rep = report.with_suffix(".ncu-rep")
            if not rep.is_file():
                raise ncu_mod.explain_empty(res.output_tail, config.profile.kernels)
            rows = throughput_mod.parse_raw_csv(ncu_mod.export(ncu, rep, "raw", cancel=cancel))
    except GpaError as exc:
        if cancel is not None and cancel.is_set():
            raise
        return profile, f"unit throughput not measured ({exc.message}); estimates are not bounded by the memory system"
    got = attach_throughput(profile, rows, "none")
    if not any(k.throughput for k in got.kernels):
        return profile, "unit throughput not measured (ncu profiled none of the sampled kernels)"
    return got, None


def _cubins_for_ncu(config: Config, build_output: str | None, workdir: Path, cancel) -> dict[str, bytes]:
    """The cubins of the program ncu ran: extracted from the executable, else rebuilt with -cubin."""
    found: dict[str, bytes] = {}
    exe = build_output
    if exe and Path(exe).is_file():
        try:
            cuobjdump = find_tool("cuobjdump")
            xdir = workdir / "xelf"
            xdir.mkdir()
            harness.run([cuobjdump, "-xelf", "all", str(Path(exe).resolve())], cwd=xdir, timeout=300, cancel=cancel,
                        what="cuobjdump")
            for f in sorted(xdir.glob("*.cubin")):
                data = f.read_bytes()
                found[hashlib.sha256(data).hexdigest()] = data
        except (GpaError, OSError):
            found = {}
    if not found and config.build.sources:
        for f in build_cubins(config, workdir / "cubins", cancel):
            data = f.read_bytes()
            found[hashlib.sha256(data).hexdigest()] = data
    return found


def loaded_cubins(config: Config, build_output: str | None, *, cancel=None, log=print) -> tuple[dict[str, bytes], str | None]:
    """The cubins the harness loads at run time, by one run under the CUPTI injection library in
    its launch-records-only mode (``GPA_CUPTI_NO_PCSAMPLING``, no activity tracing: the kernels
    run at full speed), which saves every module the driver loads: NVRTC output, a cubin read from
    a file the build does not name, CuPy's RawModule. ncu's report holds the SASS but not the
    cubin, so without this run a program that compiles its kernels when it runs has none to
    analyse. Returns ({sha256: cubin} of the launched kernels' modules, None) or ({}, why not)."""
    try:
        cupti = find_cupti()
        lib = injection_library(cupti)
        command, cwd, env = _harness_parts(config, build_output)
        with tempfile.TemporaryDirectory(prefix="gpa-modules-") as tmp:
            env.update({"CUDA_INJECTION64_PATH": str(lib), "GPA_CUPTI_OUT": tmp, "GPA_CUPTI_NO_PCSAMPLING": "1",
                        "GPA_CUPTI_NO_ACTIVITY": "1"})
            env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(cupti.libdir), os.environ.get("LD_LIBRARY_PATH", "")) if p)
            log("saving the cubins the harness loads at run time (one run under the CUPTI injection library) ...")
            res = harness.run(command, cwd=cwd, env=env, timeout=config.harness.timeout, cancel=cancel)
            LATE.wait()
            from .cupti.reader import read_output
            run = read_output(tmp, kernels=config.profile.kernels, output_tail=res.output_tail, require_samples=False)
    except GpaError as exc:
        if cancel is not None and cancel.is_set():
            raise
        return {}, f"the cubins the harness loads at run time could not be saved ({exc.message})"
    return dict(run.cubins), None


def collect_ncu(config: Config, out: Path, *, cancel=None, log=print, build_output=None) -> CollectResult:
    LATE.wait()
    from . import ncu as ncu_mod
    from .bundle import Bundle, make_manifest, write_bundle
    from .device import query_device
    ncu = find_tool("ncu", config.profile.ncu)
    command, cwd, env = _harness_parts(config, build_output)
    with tempfile.TemporaryDirectory(prefix="gpa-ncu-") as tmp:
        tmpd = Path(tmp)
        report = tmpd / "report"
        wrapper = ncu_mod.ncu_argv(ncu, report, kernels=config.profile.kernels,
                                   launch_count=config.profile.launch_count)
        log(f"running the harness under Nsight Compute ({config.profile.launch_count} launch(es) per kernel) ...")
        res = harness.run(command, cwd=cwd, env=env, timeout=config.harness.timeout, cancel=cancel, wrapper=wrapper)
        rep = report.with_suffix(".ncu-rep")
        if not rep.is_file():
            raise ncu_mod.explain_empty(res.output_tail, config.profile.kernels)
        source = ncu_mod.export(ncu, rep, "source", cancel=cancel)
        details = ncu_mod.export(ncu, rep, "details", cancel=cancel)
        raw = ncu_mod.export(ncu, rep, "raw", cancel=cancel)
        cubins = _cubins_for_ncu(config, build_output, tmpd, cancel)
        missing = ncu_mod.kernels_without_cubin(source, cubins)
        loaded_note = None
        if missing:
            # compiled or loaded at run time (NVRTC, cuModuleLoadData): the driver hands them to CUPTI
            log(f"no cubin of the build defines {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
            loaded, loaded_note = loaded_cubins(config, build_output, cancel=cancel, log=log)
            cubins.update(loaded)
        if not cubins:
            raise ProfilingError("no cubin for the profiled program (cuobjdump found none, [build] has no sources, "
                                 "and none was saved from a run under CUPTI" + (f": {loaded_note}" if loaded_note else "")
                                 + ")", "set [build] sources so gpa can build the cubins, or [build] output to the "
                                 "executable or cubin")
        profile, used, notes = ncu_mod.convert(source, details, cubins, device=query_device(),
                                               kernels=config.profile.kernels)
        notes += [loaded_note] if loaded_note else []
        if not profile.pcs:
            raise ncu_mod.explain_empty(res.output_tail, config.profile.kernels)
        profile = attach_throughput(profile, parse_raw_csv(raw), "none")
        if os.environ.get("GPA_KEEP_NCU_EXPORT"):
            keep = Path(os.environ["GPA_KEEP_NCU_EXPORT"])
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "source.csv").write_text(source)
            (keep / "details.csv").write_text(details)
            (keep / "raw.csv").write_text(raw)
    manifest = make_manifest(collector="ncu", build_command=_build_cmd(config), harness_command=command,
                             sources=_sources(config),
                             extra={"ncu": {"path": ncu, "sections": list(ncu_mod.SECTIONS),
                                            "launch_count": config.profile.launch_count},
                                    "harness_wall_s": round(res.wall_s, 3)})
    write_bundle(out, Bundle(profile, used, manifest))
    return CollectResult(out, profile, "ncu", res.wall_s, notes, cubins=used)


def _build_cmd(config: Config):
    if config.build.command is not None:
        return config.build.command
    if config.build.sources:
        try:
            return nvcc_argv(config)
        except GpaError:
            return None
    return None


def collect_result(config: Config, *, collector: str | None = None, cancel: threading.Event | None = None,
                   out: str | os.PathLike | None = None, log: Callable[[str], None] | None = None,
                   build: bool = True) -> CollectResult:
    collector = collector or config.profile.collector
    if collector == "replay":
        raise ProfilingError("collector \"replay\" records nothing: it replays [profile] bundle",
                             "choose --collector cupti or ncu to record")
    if collector not in ("cupti", "ncu"):
        raise ProfilingError(f"unknown collector {collector!r}", "use cupti or ncu")
    log = log or (lambda m: None)
    marks = Marks(log)
    if marks.on and (age := process_age()) is not None:
        log(f"timing: process start to collect {age:.3f} s (interpreter and imports)")
    require_gpu(collector)           # no driver or no device: say so before building and running
    if collector == "cupti":
        find_cupti()                 # no CUPTI: name what brings it, before the build
    marks("gpu and cupti check")
    path = Path(out) if out else _default_out(config, collector)
    build_output = (_build(config, cancel, log) if build else None) or built_output(config)
    fn = collect_cupti if collector == "cupti" else collect_ncu
    try:
        result = fn(config, path, cancel=cancel, log=log, build_output=build_output)
    except GpaError as exc:
        # the check before may have trusted a driver that passed earlier (gpu_check.require_gpu)
        if (cancel is None or not cancel.is_set()) and (why := explain_failure(collector)) is not None:
            raise why from exc
        raise
    marks.last = time.monotonic()
    if result.cubins is not None:     # what was just written: no need to read the bundle back
        note = _line_info_note(result.profile, result.cubins)
    else:
        note = line_info_note(result.path)
    if note:
        result.notes.append(note)
    marks("line information check")
    return result


def line_info_note(bundle_path) -> str | None:
    """A note when the sampled kernels' cubins have no line table (built without -lineinfo)."""
    LATE.wait()
    from .bundle import read_bundle
    try:
        b = read_bundle(bundle_path)
    except GpaError:
        return None
    return _line_info_note(b.profile, b.cubins)


def _line_info_note(profile: Profile, cubins: dict[str, bytes]) -> str | None:
    LATE.wait()
    from .cubins import has_line_info
    sampled = {k.cubin for k in profile.kernels}
    bare = [k for k, data in cubins.items() if k in sampled and not has_line_info(data)]
    if not bare:
        return None
    names = sorted({k.demangled or k.name for k in profile.kernels if k.cubin in bare})
    return (f"no line information in {len(bare)} of {len(sampled)} profiled cubin(s) ({', '.join(names[:4])}"
            f"{' ...' if len(names) > 4 else ''}): their advice has no source lines. " + NO_LINE_INFO_HINT)


NO_LINE_INFO_HINT = ("Build with -lineinfo: gpa adds it to a [build] command through NVCC_APPEND_FLAGS, "
                     "but make or CMake only recompile what changed, so clean the build once "
                     "(make clean, or remove the CMake build folder) and profile again")


def collect(config: Config, *, collector: str | None = None, cancel: threading.Event | None = None,
            out: str | os.PathLike | None = None) -> Path:
    """Build, profile and write the bundle; return its path. Raises GpaError subclasses."""
    return collect_result(config, collector=collector, cancel=cancel, out=out).path
