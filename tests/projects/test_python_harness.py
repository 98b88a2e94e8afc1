"""examples/python_harness: a Python program that loads its kernels at run time with cuda-bindings
(poly_double from a cubin [build] compiles, fir_bank compiled by NVRTC when it runs).

Replayed from bundles recorded on the H100 with both collectors: each kernel's advice, on its line
of its source in this checkout. Without a GPU: the build makes the cubin the harness loads, with
line information; the ncu collector finds which profiled kernels no cubin of the build defines and
takes them from a run under the CUPTI injection library (its module records)."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.build import build
from gpa_lsp.cli import main
from gpa_lsp.commands.analyze import no_line_info_note
from gpa_lsp.config import load
from gpa_lsp.profile import collect
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.cubins import functions, has_line_info
from gpa_lsp.profile.ncu import kernels_without_cubin
from gpa_lsp.sass.program import load_program

from .conftest import EXAMPLES

FIXTURES = Path(__file__).resolve().parents[1] / "profile" / "fixtures"
HERE = EXAMPLES / "python_harness"


def _copy(tmp_path) -> Path:
    dest = tmp_path / "python_harness"
    shutil.copytree(HERE, dest, ignore=shutil.ignore_patterns("build", "recorded", ".gpa", "__pycache__"))
    return dest


def test_the_build_makes_the_cubin_the_harness_loads(tmp_path):
    folder = _copy(tmp_path)
    cfg = load(folder)
    res = build(cfg)
    assert res.ok, res.log
    assert res.output == str(folder / "build" / "poly.cubin") and "-cubin" in res.command
    data = Path(res.output).read_bytes()
    assert has_line_info(data) and set(functions(data)) == {"poly_double"}
    harness = (folder / "harness.py").read_text()
    assert '"build" / "poly.cubin"' in harness and '"src" / "fir.cu"' in harness
    # the NVRTC program is named by its source's path: the line table leads back to src/fir.cu
    assert "nvrtcCreateProgram(source.read_bytes(), str(source).encode()" in harness
    assert "--generate-line-info" in harness


def test_kernels_without_cubin_are_those_no_cubin_defines():
    source = gzip.open(FIXTURES / "probe.ncu-source.csv.gz", "rt").read()
    cubins = read_bundle(FIXTURES / "probe-run2.cupti.gpabundle").cubins
    everything = ["_Z5chasePKiPKfPfii", "_Z7stencilPKfPfii", "_Z8localarrPKfPfii"]
    assert kernels_without_cubin(source, cubins) == []
    assert kernels_without_cubin(source, {}) == everything


def _fake_injection_run(cubin: bytes, kernel: str, seen: dict):
    """harness.run as the injection library leaves it in launch-records-only mode: a module record,
    the cubin file, launch records and END (gpa_inject.c's format 2)."""

    def run(command, *, cwd, env, timeout, cancel=None, **kw):
        seen.update(env=dict(env), command=list(command), cwd=cwd)
        out = Path(env["GPA_CUPTI_OUT"])
        (out / "cubin_00000000deadbeef.cubin").write_bytes(cubin)
        lines = ["V 2 130000 12",
                 "D 1 0 9 0 132 1980000 2048 32 65536 233472 1024 13000 NVIDIA H100 80GB HBM3",
                 f"M 1 deadbeef 1 {len(cubin)} cubin_00000000deadbeef.cubin",
                 f"L 1 0 16384 1 1 256 1 1 0 7 {kernel}",
                 f"L 1 0 16384 1 1 256 1 1 0 9 {kernel}", "END"]
        (out / "cupti.txt").write_text("\n".join(lines) + "\n")
        return collect.harness.RunResult(argv=tuple(command), returncode=0, stdout="", stderr="", wall_s=0.1)

    return run


def test_loaded_cubins_come_from_a_run_in_launch_records_only_mode(tmp_path, monkeypatch):
    folder = _copy(tmp_path)
    cfg = load(folder)
    res = build(cfg)
    jit = Path(res.output).read_bytes()          # stands for the cubin NVRTC made in the harness's memory
    seen: dict = {}
    monkeypatch.setattr(collect, "injection_library", lambda cupti: tmp_path / "libgpa_inject.so")
    monkeypatch.setattr(collect.harness, "run", _fake_injection_run(jit, "poly_double", seen))
    got, note = collect.loaded_cubins(cfg, res.output, log=lambda m: None)
    assert note is None and got == {hashlib.sha256(jit).hexdigest(): jit}
    env = seen["env"]
    assert env["CUDA_INJECTION64_PATH"] == str(tmp_path / "libgpa_inject.so")
    assert env["GPA_CUPTI_NO_PCSAMPLING"] == "1" and env["GPA_CUPTI_NO_ACTIVITY"] == "1"
    assert seen["command"] == ["python3", "harness.py"] and Path(seen["cwd"]) == folder


def test_loaded_cubins_say_why_not(tmp_path, monkeypatch):
    from gpa_lsp.errors import ProfilingError
    cfg = load(_copy(tmp_path))

    def no_cupti():
        raise ProfilingError("CUPTI was not found", "install the cupti extra")

    monkeypatch.setattr(collect, "find_cupti", no_cupti)
    got, note = collect.loaded_cubins(cfg, None, log=lambda m: None)
    assert got == {} and "could not be saved (CUPTI was not found)" in note


# ---------------------------------------------------------------- recorded on the H100
# scripts/gpu/record_projects.sh (GPA_EXAMPLES=examples/python_harness), both collectors

COLLECTORS = ("cupti", "ncu")


def _report(collector: str):
    return advise_bundle(HERE / "recorded" / f"{collector}.gpabundle", config=load(HERE))


@pytest.mark.parametrize("collector", COLLECTORS)
def test_the_cubin_kernel_gets_float_literals_on_its_loop_line(collector):
    report = _report(collector)
    assert report.collector == collector and no_line_info_note(report) is None
    (k,) = [k for k in report.kernels if k.name == "poly_double"]
    assert k.file == str(HERE / "src" / "poly.cu") and k.launches == (20 if collector == "cupti" else 2)
    top = k.advice[0]
    assert top.optimizer == "strength_reduction" and top.location.line == 10 and top.location.file == k.file
    assert 3.0 < top.estimated_speedup < 5.0
    assert top.fix.kind == "float_literal" and top.fix.line == 10 and top.fix.params["columns"] == [[12, 15], [18, 22]]
    hottest = max(k.lines, key=lambda l: l.samples)
    assert (hottest.file, hottest.line) == (k.file, 10)


@pytest.mark.parametrize("collector", COLLECTORS)
def test_the_nvrtc_kernel_gets_restrict_on_its_parameters(collector):
    """fir_bank's cubin existed only in the harness's memory: CUPTI saved it as the driver loaded it,
    and its line table (the NVRTC program's name: the source's path on the recording machine) leads
    to src/fir.cu of this checkout through the manifest's sources."""
    report = _report(collector)
    (k,) = [k for k in report.kernels if k.name == "fir_bank"]
    assert k.file == str(HERE / "src" / "fir.cu") and k.samples > 10_000
    # CUPTI has no sector counts: Restrict Pointer leads; ncu's show the stride-4 loads, and Global
    # Memory Coalescing may lead, on the same line
    ranked = [a.optimizer for a in k.advice]
    assert k.advice[0].location.line == 12
    assert ranked[0] == "restrict_pointer" if collector == "cupti" else \
        ranked[0] in {"restrict_pointer", "global_memory_coalescing"}
    restrict = k.advice[ranked.index("restrict_pointer")]
    assert ranked.index("restrict_pointer") <= 1 and restrict.location.line == 12
    assert 2.0 < restrict.estimated_speedup < 3.0
    assert restrict.fix.kind == "restrict" and restrict.fix.line == 5 and restrict.fix.params["parameters"] == ["in", "taps"]
    assert {l.file for l in k.lines} == {k.file}
    loads = max(k.lines, key=lambda l: l.samples)
    assert loads.line == 12 and "in[base + o + t]" in (HERE / "src/fir.cu").read_text().splitlines()[11]


def test_the_bundles_hold_the_jit_cubin_and_the_built_one():
    """Both collectors analysed the same two cubins: the one [build] made (nvcc) and NVRTC's, which
    the ncu collector took from its run under the CUPTI injection library."""
    cupti, ncu = (read_bundle(HERE / "recorded" / f"{c}.gpabundle") for c in COLLECTORS)
    for b in (cupti, ncu):
        assert b.manifest["harness_command"] == ["python3", "harness.py"]
        assert [s["path"] for s in b.manifest["sources"]] == ["src/poly.cu", "src/fir.cu"]
        by_name = {k.name: k.cubin for k in b.profile.kernels}
        assert set(by_name) == {"poly_double", "fir_bank"} and by_name["poly_double"] != by_name["fir_bank"]
        assert set(functions(b.cubins[by_name["fir_bank"]])) == {"fir_bank"}
    assert {k.name: k.cubin for k in cupti.profile.kernels} == {k.name: k.cubin for k in ncu.profile.kernels}
    (fir,) = [f for f in load_program(ncu.cubins[next(k.cubin for k in ncu.profile.kernels if k.name == "fir_bank")])
              .functions if f.name == "fir_bank"]
    recorded = {i.loc.file for i in fir.instructions if i.loc}
    assert len(recorded) == 1 and next(iter(recorded)).endswith("examples/python_harness/src/fir.cu")
    assert recorded != {str(HERE / "src" / "fir.cu")}     # another machine's path, mapped on replay


def test_gpa_advise_the_example(capsys):
    assert main(["advise", str(HERE), "--top", "2"]) == 0
    out = capsys.readouterr()
    assert "Kernel poly_double (poly.cu:5)" in out.out and "Kernel fir_bank (fir.cu:5)" in out.out
    assert "change `0.5` to `0.5f` at poly.cu:10:13" in out.out
    assert "`float* in` to `const float* __restrict__ in` at fir.cu:5:49" in out.out
    assert "no line information" not in out.err
