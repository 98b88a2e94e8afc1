"""A real Makefile project and a real CMake project (-rdc, two device files) built by gpa's build
stage: -lineinfo reaches nvcc through NVCC_APPEND_FLAGS without touching their build files, the
executables disassemble with source lines, and the Nsight Compute collector finds their cubins
from [build] output (no [build] sources)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpa_lsp.build import build, lineinfo_env
from gpa_lsp.cli import main
from gpa_lsp.config import BuildConfig, Config, load
from gpa_lsp.profile import collect
from gpa_lsp.profile.bundle import Bundle, make_manifest, write_bundle
from gpa_lsp.profile.cubins import functions, has_line_info
from gpa_lsp.profile.model import Device, Kernel, PCStats, Profile
from gpa_lsp.sass import load_programs

from .conftest import PROJECTS

# the make and CMake builds (a session fixture) run once, on one worker
pytestmark = pytest.mark.xdist_group("projects-build")


def _functions(exe):
    return {f.name: f for p in load_programs(exe) for f in p.functions if f.instructions}


@pytest.mark.parametrize("name", list(PROJECTS))
def test_built_with_line_info(built_projects, name):
    folder, cfg, res = built_projects[name]
    exe, kernel, source = PROJECTS[name]
    assert res.output == str((folder / exe).resolve())
    build_file = (folder / ("Makefile" if name == "make_project" else "CMakeLists.txt")).read_text()
    assert "-lineinfo" not in "\n".join(l for l in build_file.splitlines() if not l.lstrip().startswith("#"))
    assert "-lineinfo" not in res.log                 # make echoes its nvcc lines: the flag came from the environment
    fns = _functions(res.output)
    (k,) = [f for n, f in fns.items() if kernel in n]
    files = {i.loc.file for i in k.instructions if i.loc}
    assert files == {str(folder / source)}, files
    assert all(i.loc for i in k.instructions if i.opcode not in ("NOP", "BRA", "EXIT")), \
        "every instruction of the kernel has a source line"


def test_cmake_rdc_device_function_from_another_file(built_projects):
    folder, _, res = built_projects["cmake_project"]
    programs = load_programs(res.output)
    (linked,) = [p for p in programs if any("row_sums_kernel" in f.name for f in p.functions)]
    scale = next(f for f in linked.functions if "scale_sum" in f.name)     # device-linked from scale.cu
    assert {i.loc.file for i in scale.instructions if i.loc} == {str(folder / "src/scale.cu")}


@pytest.mark.parametrize("name", list(PROJECTS))
def test_gpa_disasm_the_executable(built_projects, name, capsys):
    folder, _, res = built_projects[name]
    _, kernel, source = PROJECTS[name]
    assert main(["disasm", res.output, "--kernel", kernel, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    text = json.dumps(data)
    assert kernel in text and str(folder / source) in text
    assert main(["disasm", res.output, "--kernel", kernel]) == 0
    assert f"{Path(source).name}:" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(PROJECTS))
def test_ncu_collector_finds_cubins_from_output(built_projects, name, tmp_path):
    """`gpa profile --no-build --collector ncu` of a [build] command project: no sources, the
    cubins come out of [build] output (cuobjdump)."""
    folder, cfg, _ = built_projects[name]
    _, kernel, _ = PROJECTS[name]
    assert not cfg.build.sources and cfg.build.command
    out = collect.built_output(cfg)
    assert out == str(folder / PROJECTS[name][0])
    cubins = collect._cubins_for_ncu(cfg, out, tmp_path, None)
    assert any(any(kernel in f for f in functions(data)) for data in cubins.values())
    assert all(has_line_info(data) for data in cubins.values() if any(kernel in f for f in functions(data)))


def test_sources_of_a_build_command_project_are_recorded(built_projects):
    folder, cfg, _ = built_projects["cmake_project"]
    paths = sorted(s["path"] for s in collect._sources(cfg))
    assert paths == ["src/main.cu", "src/rowsum.cu", "src/rowsum.h", "src/scale.cu"]


def test_nvcc_append_flags_keeps_the_users():
    assert lineinfo_env({}) == {"NVCC_APPEND_FLAGS": "-lineinfo"}
    assert lineinfo_env({"NVCC_APPEND_FLAGS": "-Xptxas -v"}) == {"NVCC_APPEND_FLAGS": "-Xptxas -v -lineinfo"}
    assert lineinfo_env({"NVCC_APPEND_FLAGS": "-G"}) == {}
    assert lineinfo_env({"NVCC_APPEND_FLAGS": "-O3 -lineinfo"}) == {}


def test_build_command_sees_nvcc_append_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-DMINE=1")
    (tmp_path / "gpa.toml").write_text(
        f'[build]\ncommand = ["{sys.executable}", "-c", "import os; open(\'flags.txt\', \'w\').write('
        f'os.environ[\'NVCC_APPEND_FLAGS\'])"]\n')
    assert build(load(tmp_path)).ok
    assert (tmp_path / "flags.txt").read_text() == "-DMINE=1 -lineinfo"


def _bundle_of(cubin: bytes, tmp_path) -> Path:
    from hashlib import sha256
    sha = sha256(cubin).hexdigest()
    name = next(n for n in functions(cubin) if "smooth_kernel" in n)
    prof = Profile("ncu", Device("NVIDIA H100", 90, 132), (Kernel(name, "smooth_kernel(const float*, float*, int)", sha),),
                   (PCStats(sha, name, 0x10, (("long_scoreboard", 90), ("selected", 10)), ()),), total_samples=100)
    return write_bundle(tmp_path / "bare.gpabundle", Bundle(prof, {sha: cubin}, make_manifest(collector="ncu")))


def test_cubins_without_line_info_get_a_note(tmp_path, capsys):
    from gpa_lsp.toolchain import find_tool
    import subprocess
    src = Path(__file__).resolve().parents[2] / "examples/make_project/src/smooth.cu"
    cubin = tmp_path / "bare.cubin"
    subprocess.run([find_tool("nvcc"), "-cubin", "-arch=sm_90", "-O3", "-I", str(src.parent), "-o", str(cubin),
                    str(src)], check=True, env={k: v for k, v in __import__("os").environ.items()
                                                if k != "NVCC_APPEND_FLAGS"})
    data = cubin.read_bytes()
    assert not has_line_info(data)
    bundle = _bundle_of(data, tmp_path)
    note = collect.line_info_note(bundle)
    assert note and "no line information in 1 of 1 profiled cubin" in note and "smooth_kernel" in note
    assert "make clean" in note
    assert main(["analyze", str(bundle)]) == 0
    err = capsys.readouterr().err
    assert "carry no line information (smooth_kernel" in err and "-lineinfo" in err


def test_cubins_with_line_info_get_no_note(built_projects, tmp_path):
    _, _, res = built_projects["make_project"]
    cubins = collect._cubins_for_ncu(Config(build=BuildConfig(command=("make",))), res.output, tmp_path, None)
    (data,) = [d for d in cubins.values() if any("smooth_kernel" in f for f in functions(d))]
    assert collect.line_info_note(_bundle_of(data, tmp_path)) is None


def test_a_bundle_recorded_elsewhere_reads_this_checkouts_sources(built_projects, tmp_path):
    """The recording machine's paths (the built copy) map to the project here (examples/) through
    the sources a [build] command project records in the manifest."""
    from hashlib import sha256

    from gpa_lsp.analysis.advisor import advise_bundle
    folder, cfg, res = built_projects["make_project"]
    cubins = collect._cubins_for_ncu(cfg, res.output, tmp_path, None)
    (data,) = [d for d in cubins.values() if any("smooth_kernel" in f for f in functions(d))]
    sha = sha256(data).hexdigest()
    fn = next(f for p in load_programs(res.output) for f in p.functions if "smooth_kernel" in f.name)
    ldg = [i for i in fn.instructions if i.opcode.startswith("LDG")]
    prof = Profile("ncu", Device("NVIDIA H100", 90, 132), (Kernel(fn.name, "smooth_kernel", sha),),
                   tuple(PCStats(sha, fn.name, i.offset, (("long_scoreboard", 100),), ()) for i in ldg),
                   total_samples=100 * len(ldg))
    manifest = make_manifest(collector="ncu", build_command=cfg.build.command, sources=collect._sources(cfg))
    bundle = write_bundle(tmp_path / "elsewhere.gpabundle", Bundle(prof, {sha: data}, manifest))
    here = Path(__file__).resolve().parents[2] / "examples" / "make_project"
    (k,) = advise_bundle(bundle, config=load(here)).kernels
    assert k.file == str(here / "src" / "smooth.cu")
    assert {l.file for l in k.lines} == {k.file} and all("x[" in (here / "src/smooth.cu").read_text()
                                                          .splitlines()[l.line - 1] for l in k.lines if l.samples)
