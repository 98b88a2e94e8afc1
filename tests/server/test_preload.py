"""The built program's cubins loaded while the harness runs (issue 17's editor target).

After a build, ``pipeline.execute`` asks the folder's worker to load the Programs of the built
program's cubins (``sass.program.preload``: nvdisasm is most of an analysis) while the harness
runs; the analysis of the fresh bundle then finds them cached. Checked here with the real worker
and a logging nvdisasm (the real one, each call written down): the analysis that follows the
collection starts no nvdisasm of its own, and its report is the one a worker without the
preload gives. The bytes the driver hands CUPTI are the bytes cuobjdump extracts from the
executable (what the preload reads): every recorded case's cupti and ncu bundles share their
cubins' sha256 (the ncu collector extracts them with cuobjdump).
"""

from __future__ import annotations

import dataclasses
import glob
import shutil
import subprocess
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpa_lsp import procs
from gpa_lsp.analysis.model import to_json
from gpa_lsp.config import load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.sass import disasm, program
from gpa_lsp.server.cache import ResultCache
from gpa_lsp.server.pipeline import Stages, execute
from gpa_lsp.server.worker import AnalysisWorker
from gpa_lsp.toolchain import find_tool

pytestmark = pytest.mark.skipif(not procs.runner_available(), reason="needs Linux /proc and prctl")

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
CASE = "hotspot_double"


def _logging_nvdisasm(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "nvdisasm.log"
    fake = tmp_path / "nvdisasm"
    fake.write_text(f"""#!/bin/sh
echo "$$" >> "{log}"
exec "{find_tool('nvdisasm')}" "$@"
""")
    fake.chmod(0o755)
    return fake, log


def _calls(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def _project(tmp_path: Path) -> Path:
    shutil.copytree(KERNELS / "common", tmp_path / "common")
    dst = tmp_path / CASE
    shutil.copytree(KERNELS / CASE, dst, ignore=shutil.ignore_patterns("build", ".gpa", "improved"))
    return dst


def test_the_analysis_after_the_harness_runs_no_nvdisasm_of_its_own(tmp_path, monkeypatch):
    fake, log = _logging_nvdisasm(tmp_path)
    monkeypatch.setenv("GPA_NVDISASM", str(fake))
    folder = _project(tmp_path)
    cfg = load(folder)
    cfg = dataclasses.replace(cfg, verify=dataclasses.replace(cfg.verify, on_save=False))
    recorded = folder / "recorded" / "cupti.gpabundle"
    bundle = read_bundle(recorded)
    sampled = {k.cubin for k in bundle.profile.kernels}
    assert len(sampled) == 1
    built = Path(cfg.resolve(cfg.build.output))
    order: list[str] = []

    def build(config, cancel=None):
        # the "build": the recorded run's cubin where [build] output puts the program (a cubin is
        # a program the preload reads as it is; an executable's cubins are extracted first)
        order.append("build")
        built.parent.mkdir(parents=True, exist_ok=True)
        built.write_bytes(bundle.cubins[next(iter(sampled))])
        return SimpleNamespace(ok=True, messages=(), log="", output=str(built))

    def collect(config, cancel, out):
        # the harness "runs" until the worker's nvdisasm of the built cubin has started
        order.append("collect")
        deadline = time.monotonic() + 60
        while _calls(log) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        order.append(f"nvdisasm calls while the harness ran: {_calls(log)}")
        with zipfile.ZipFile(recorded) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                dst.writestr(info, src.read(info))
        return out

    stages = Stages(build=build, collect=collect, measure=lambda *a, **k: "throughput not measured (test)",
                    has_gpu=lambda: True)
    worker = AnalysisWorker("preload")
    worker.start()
    try:
        out = execute(cfg, trusted=True, cancel=threading.Event(), cache=ResultCache(folder, home=tmp_path / "c"),
                      stages=stages, worker=worker)
        assert out.error is None, out.error
        assert order == ["build", "collect", "nvdisasm calls while the harness ran: 1"]
        assert _calls(log) == 1, "the analysis ran nvdisasm again instead of taking the preloaded Program"
    finally:
        worker.stop()

    # the same report as a worker that had nothing preloaded
    fresh = AnalysisWorker("no preload")
    try:
        plain = fresh.advise(str(recorded), cfg)
    finally:
        fresh.stop()
    assert _calls(log) == 2
    assert out.report.kernels and any(a.optimizer == "strength_reduction" for k in out.report.kernels for a in k.advice)
    assert to_json(dataclasses.replace(out.report, source="")) == to_json(dataclasses.replace(plain, source=""))


def test_a_replay_preloads_nothing(tmp_path, monkeypatch):
    """No build, no harness: nothing to load ahead (the recorded bundle's analysis loads its cubins)."""
    fake, log = _logging_nvdisasm(tmp_path)
    monkeypatch.setenv("GPA_NVDISASM", str(fake))
    folder = _project(tmp_path)
    cfg = load(folder)
    built = Path(cfg.resolve(cfg.build.output))
    built.parent.mkdir(parents=True, exist_ok=True)
    built.write_bytes(next(iter(read_bundle(cfg.bundle_path).cubins.values())))
    calls: list[str] = []
    stub = SimpleNamespace(preload=lambda path: calls.append(path),
                           advise=lambda bundle, config, cancel=None: (_ for _ in ()).throw(RuntimeError("stop")))
    execute(cfg, trusted=True, cancel=threading.Event(), cache=ResultCache(folder, home=tmp_path / "c"),
            stages=Stages(has_gpu=lambda: False), profile=False, worker=stub)
    assert calls == []


def test_cupti_is_handed_the_cubins_cuobjdump_extracts():
    cases = sorted(glob.glob(str(KERNELS / "*" / "recorded" / "cupti.gpabundle")))
    assert len(cases) >= 20
    for c in cases:
        ncu = Path(c).with_name("ncu.gpabundle")
        if ncu.is_file():
            cupti_shas = {k.cubin for k in read_bundle(c).profile.kernels}
            assert cupti_shas <= set(read_bundle(ncu).cubins), c


@pytest.mark.skipif(shutil.which("g++") is None, reason="nvcc needs a host compiler to link an executable")
def test_preloading_an_executable_leaves_its_cubins_nothing_to_disassemble(tmp_path, monkeypatch):
    src = tmp_path / "app.cu"
    src.write_text("__global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }\n"
                   "__global__ void j(int* a, int n) { for (int i = 0; i < n; ++i) a[i] += i; }\n"
                   "int main() { return 0; }\n")
    exe = tmp_path / "app"
    subprocess.run([find_tool("nvcc"), "-lineinfo", "-arch=sm_90", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    calls: list[str] = []
    real = disasm.run_nvdisasm
    monkeypatch.setattr(disasm, "run_nvdisasm", lambda path, **kw: calls.append(str(path)) or real(path, **kw))
    program.clear_cache()
    assert program.preload(exe) >= 1
    ran = len(calls)
    assert ran >= 1
    xdir = tmp_path / "x"
    xdir.mkdir()
    subprocess.run([find_tool("cuobjdump"), "-xelf", "all", str(exe)], cwd=xdir, check=True, capture_output=True)
    cubins = sorted(xdir.glob("*.cubin"))
    assert cubins
    for c in cubins:
        p = program.load_program(c.read_bytes())
        assert p.function("_Z1kPf") is not None
    assert len(calls) == ran, "a preloaded cubin was disassembled again"
    assert program.preload(tmp_path / "missing") == 0 and program.preload(src) == 0
