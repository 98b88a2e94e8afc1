"""The editor's verification phase (pipeline.execute): sampled advice first, then the verified advice.

Stand-ins replace the GPU stages only: "build" reports success, "collect" writes kernels/
hotspot_double's H100 recording as the fresh bundle. The verification is the real one (scratch
copies, nvcc, the SASS compared), without timing (no GPU in CI).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpa_lsp.config import load
from gpa_lsp.server.cache import ResultCache
from gpa_lsp.server.pipeline import Stages, execute
from gpa_lsp.verify.runner import advise, verify_in_editor

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _project(tmp_path: Path) -> Path:
    shutil.copytree(KERNELS / "common", tmp_path / "common")
    dst = tmp_path / "hotspot_double"
    shutil.copytree(KERNELS / "hotspot_double", dst, ignore=shutil.ignore_patterns("build", ".gpa", "improved"))
    return dst


def _stages(folder: Path, log: list, verify=None) -> Stages:
    recorded = folder / "recorded" / "cupti.gpabundle"

    def build(config, cancel=None):
        log.append("build")
        return SimpleNamespace(ok=True, messages=(), log="")

    def collect(config, cancel, out):
        # a fresh collection: the recording's profile and cubins, none of its stored verification
        log.append("collect")
        with zipfile.ZipFile(recorded) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                if info.filename != "verification.json":
                    dst.writestr(info, src.read(info))
        return out

    def verify_stage(config, bundle, report, *, cancel, dynamic, store, store_path, progress):
        log.append(("verify", dynamic, store))
        return (verify or verify_in_editor)(config, bundle, report, cancel=cancel, dynamic=False, store=store,
                                            store_path=store_path, progress=progress)
    return Stages(build=build, collect=collect, measure=lambda *a, **k: "throughput not measured (test)",
                  advise=lambda bundle, config: advise(bundle, config), verify=verify_stage, has_gpu=lambda: True)


def _strength(report):
    return next(a for k in report.kernels for a in k.advice if a.optimizer == "strength_reduction")


def test_sampled_advice_first_then_verified(tmp_path):
    folder = _project(tmp_path)
    log, partial, stages_seen = [], [], []
    cfg = load(folder)
    out = execute(cfg, trusted=True, cancel=threading.Event(), cache=ResultCache(folder, home=tmp_path / "c"),
                  stages=_stages(folder, log), on_partial=partial.append,
                  on_stage=lambda s, d: stages_seen.append((s, d)))
    assert out.error is None, out.error
    assert ("verify", True, True) in log          # a fresh collection: timed with a GPU, stored in gpa's bundle
    assert [p.phase for p in partial][-1] == "verifying"
    assert _strength(partial[-1].report).verification is None
    v = _strength(out.report).verification
    assert v is not None and v.status == "static" and dict(v.diff.vanished).get("conversion", 0) >= 20
    assert any(s == "verifying" and d.startswith("1/") for s, d in stages_seen)
    # the user's recorded bundle was not rewritten; gpa's own (in the cache) holds the result
    before = zipfile.ZipFile(KERNELS / "hotspot_double" / "recorded" / "cupti.gpabundle").read("verification.json")
    assert zipfile.ZipFile(folder / "recorded" / "cupti.gpabundle").read("verification.json") == before


def test_untrusted_builds_nothing(tmp_path):
    folder = _project(tmp_path)
    log = []
    out = execute(load(folder), trusted=False, cancel=threading.Event(),
                  cache=ResultCache(folder, home=tmp_path / "c"), stages=_stages(folder, log))
    assert out.report is not None and log == []


@pytest.fixture
def scratch_home(tmp_path, monkeypatch) -> Path:
    """A temporary folder of this test's own for the scratch copies (tempfile here, TMPDIR for the
    spawned worker): the processes and copies looked for are this test's, not those of a test
    running beside it (pytest-xdist) or of another verification on the machine."""
    home = tmp_path / "tmp"
    home.mkdir()
    monkeypatch.setenv("TMPDIR", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(home))
    return home


def _scratch_processes(home: Path) -> list[str]:
    """Command lines of the processes working in a scratch copy under ``home``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{home}/gpa-verify-" in cmd:
            found.append(cmd)
    return found


def test_a_newer_save_cancels_verification_and_kills_its_processes(tmp_path, scratch_home):
    folder = _project(tmp_path)
    log, seen = [], []
    cancel = threading.Event()

    def slow_verify(config, bundle, report, *, cancel, dynamic, store, store_path=None, progress):
        def save_while_building():
            # the user saves again while nvcc compiles the variant in its scratch copy
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not seen:
                seen.extend(_scratch_processes(scratch_home))
                time.sleep(0.01)
            cancel.set()

        def watch(i, n, what):
            progress(i, n, what)
            threading.Thread(target=save_while_building, daemon=True).start()
        return verify_in_editor(config, bundle, report, cancel=cancel, dynamic=False, store=store,
                                store_path=store_path, progress=watch)
    cfg = load(folder)
    scratch_before = set(scratch_home.glob("gpa-verify-*"))
    out = execute(cfg, trusted=True, cancel=cancel, cache=ResultCache(folder, home=tmp_path / "c"),
                  stages=_stages(folder, log, verify=slow_verify))
    assert out.cancelled and out.report is None
    assert seen, "nvcc was not running in a scratch copy when the save came"
    time.sleep(0.5)
    assert _scratch_processes(scratch_home) == [], "a process of the cancelled verification survived"
    assert set(scratch_home.glob("gpa-verify-*")) <= scratch_before, "a scratch copy was left behind"


def test_a_second_save_reuses_the_verification(tmp_path):
    """Replaying the recorded bundle (no GPU): results go to the folder's cache, not the user's
    bundle, and a save that changed nothing the fix touches builds nothing again."""
    folder = _project(tmp_path)
    cfg = load(folder)
    stages = _stages(folder, [])
    stages.has_gpu = lambda: False
    cache = ResultCache(folder, home=tmp_path / "c")
    first = execute(cfg, trusted=True, cancel=threading.Event(), cache=cache, stages=stages)
    assert _strength(first.report).verification.status == "static"
    assert (cache.dir / "verification.json").is_file()
    built = []
    import gpa_lsp.verify.runner as runner
    real = runner.build_cubins
    runner.build_cubins = lambda *a, **k: built.append(a) or real(*a, **k)
    try:
        again = execute(cfg, trusted=True, cancel=threading.Event(), cache=cache, stages=stages)
    finally:
        runner.build_cubins = real
    assert built == [] and _strength(again.report).verification.status == "static"


def test_a_verification_in_the_analysis_worker_stops_when_cancelled_and_cleans_up(tmp_path, scratch_home):
    """The editor's path: the analysis and the verification run in the folder's worker process
    (server/worker.py). A save while nvcc compiles a variant there: the worker is asked to stop, its
    verification stops within the grace period (no scratch copy or process left) and the worker
    stays for the next run."""
    from gpa_lsp.server.worker import AnalysisWorker

    folder = _project(tmp_path)
    stages = _stages(folder, [])
    stages.verify = None                                   # the real one, in the worker
    cancel = threading.Event()
    seen: list[str] = []

    def save_while_building():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not seen:
            seen.extend(_scratch_processes(scratch_home))
            time.sleep(0.01)
        cancel.set()

    threading.Thread(target=save_while_building, daemon=True).start()
    worker = AnalysisWorker("hotspot_double")
    worker.start()
    scratch_before = set(scratch_home.glob("gpa-verify-*"))
    try:
        start = time.monotonic()
        out = execute(load(folder), trusted=True, cancel=cancel, cache=ResultCache(folder, home=tmp_path / "c"),
                      stages=stages, worker=worker)
        assert out.cancelled and out.report is None
        assert seen, "nvcc was not running in a scratch copy of the worker when the save came"
        assert time.monotonic() - start < 240
        time.sleep(0.5)
        assert _scratch_processes(scratch_home) == [], "a process of the cancelled verification survived"
        assert set(scratch_home.glob("gpa-verify-*")) <= scratch_before, \
            "a scratch copy was left behind"
        assert worker.alive(), "the verification did not stop within the grace period: the worker was killed"
    finally:
        worker.stop()
