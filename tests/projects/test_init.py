"""`gpa init`: a gpa.toml that loads, for a plain .cu folder, a Makefile project and a CMake project;
never over an existing one without --force."""

import pytest

from gpa_lsp.cli import main
from gpa_lsp.commands import init
from gpa_lsp.config import load_file

KERNEL = """
__global__ void __launch_bounds__(256) scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
"""
MAIN = "int main() { return 0; }\n"


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    """The file must not depend on whether this machine has a GPU (see test_sm_of_the_gpu)."""
    monkeypatch.setattr(init, "_gpu_sm", lambda: (90, None))


def _init(folder, *extra):
    assert main(["init", str(folder), *extra]) == 0
    text = (folder / "gpa.toml").read_text()
    return text, load_file(folder / "gpa.toml")


def test_stdout_prints_what_it_would_write_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "app.cu").write_text(KERNEL + MAIN)
    assert main(["init", str(tmp_path), "--stdout"]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.cu"]        # no gpa.toml, no scratch file
    _, cfg = _init(tmp_path)
    assert (tmp_path / "gpa.toml").read_text() == printed and cfg.build.sources == ("app.cu",)


def test_plain_cu_folder(tmp_path, capsys):
    (tmp_path / "app.cu").write_text(KERNEL + MAIN)
    (tmp_path / "helpers.cu").write_text("__global__ void add1(int* p) { *p += 1; }\n")
    (tmp_path / "variant.cu").write_text(MAIN)                 # a second program: left out
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "stale.cu").write_text(KERNEL)       # build output folders are not sources
    text, cfg = _init(tmp_path)
    assert cfg.build.sources == ("app.cu", "helpers.cu")
    assert cfg.build.nvcc_flags == ("-O3", "-arch=sm_90") and cfg.build.command is None
    assert cfg.build.output == "build/app" and cfg.harness.command == ("build/app",)
    assert cfg.profile.collector == "cupti" and cfg.profile.bundle is None
    assert "left out (they define main() too): variant.cu" in text
    assert "found: scale, add1" in text and "no GPU here: Hopper (H100) assumed" in text
    # every key is explained: a comment line precedes each key line
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith(("#", "[")):
            assert lines[i - 1].startswith("#"), line
    out = capsys.readouterr().out
    assert "wrote" in out and "kernels: scale, add1" in out and "gpa profile" in out


def test_makefile_project(tmp_path):
    (tmp_path / "kern.cu").write_text(KERNEL + MAIN)
    (tmp_path / "Makefile").write_text("NVCC ?= nvcc\nTARGET = bin/scale\n\nall: $(TARGET)\n\n"
                                       "$(TARGET): kern.cu\n\t$(NVCC) -O3 -o $@ $<\n\nclean:\n\trm -f $(TARGET)\n")
    text, cfg = _init(tmp_path)
    assert cfg.build.command == ("make",) and cfg.build.sources == ()
    assert cfg.build.output == "bin/scale" and cfg.harness.command == ("bin/scale",)
    assert "NVCC_APPEND_FLAGS" in text


def test_makefile_without_variable_takes_the_first_program_rule(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL + MAIN)
    (tmp_path / "makefile").write_text(".PHONY: all clean\nall: demo\n\ndemo: k.cu\n\tnvcc -o demo k.cu\n")
    _, cfg = _init(tmp_path)
    assert cfg.build.output == "demo"
    (tmp_path / "makefile").write_text("k.o: k.cu\n\tnvcc -c k.cu\nsaxpy: k.o\n\tnvcc -o saxpy k.o\n")
    _, cfg = _init(tmp_path, "--force")
    assert cfg.build.output == "saxpy"


def test_cmake_project_and_a_harness_script(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kern.cu").write_text(KERNEL + MAIN)
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.24)\nproject(p LANGUAGES CXX CUDA)\n"
                                             "add_executable(scaler src/kern.cu)\nadd_executable(other src/kern.cu)\n")
    (tmp_path / "run_bench.sh").write_text("./build/scaler 1024\n")
    text, cfg = _init(tmp_path)
    assert isinstance(cfg.build.command, str)
    assert "cmake -S . -B build" in cfg.build.command and "-DCMAKE_CUDA_ARCHITECTURES=90" in cfg.build.command
    assert cfg.build.output == "build/scaler" and "build/other" in text
    assert cfg.harness.command == ("bash", "run_bench.sh")
    assert '# or the built program: command = ["build/scaler"]' in text
    # a CMakeLists.txt that sets the architectures keeps them
    (tmp_path / "CMakeLists.txt").write_text("project(p LANGUAGES CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 80)\n"
                                             "add_executable(scaler src/kern.cu)\n")
    _, cfg = _init(tmp_path, "--force")
    assert "CMAKE_CUDA_ARCHITECTURES" not in cfg.build.command


def test_recorded_bundle_is_configured(tmp_path):
    (tmp_path / "a.cu").write_text(KERNEL + MAIN)
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / "cupti.gpabundle").write_bytes(b"")
    _, cfg = _init(tmp_path)
    assert cfg.profile.bundle == "recorded/cupti.gpabundle"


def test_refuses_to_overwrite_without_force(tmp_path, capsys):
    (tmp_path / "a.cu").write_text(KERNEL + MAIN)
    (tmp_path / "gpa.toml").write_text("[build]\nsources = [\"mine.cu\"]\n")
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err
    assert (tmp_path / "gpa.toml").read_text() == "[build]\nsources = [\"mine.cu\"]\n"
    _, cfg = _init(tmp_path, "--force")
    assert cfg.build.sources == ("a.cu",)
    assert not list(tmp_path.glob(".gpa.toml*"))


def test_empty_folder_writes_todos_that_load(tmp_path):
    text, cfg = _init(tmp_path)
    assert cfg.build.sources == () and cfg.build.command is None and cfg.harness.command is None
    assert "TODO" in text


def test_not_a_folder(tmp_path, capsys):
    assert main(["init", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_sm_of_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(init, "_gpu_sm", lambda: (100, "NVIDIA B200"))
    (tmp_path / "a.cu").write_text(KERNEL + MAIN)
    text, cfg = _init(tmp_path)
    assert cfg.build.nvcc_flags == ("-O3", "-arch=sm_100") and "the GPU here (NVIDIA B200)" in text


def test_gpu_sm_without_a_driver_is_sm_90(monkeypatch):
    monkeypatch.undo()
    from gpa_lsp.profile import gpu_check
    monkeypatch.setattr(gpu_check, "_load_libcuda", lambda: (None, None, "no libcuda"))
    assert init._gpu_sm() == (90, None)


@pytest.mark.parametrize("name", ["make_project", "cmake_project", "python_harness"])
def test_init_on_the_examples_finds_their_build(tmp_path, name):
    from .conftest import copy_example
    folder = copy_example(name, tmp_path)
    shipped = load_file(folder / "gpa.toml")
    (folder / "gpa.toml").unlink()
    _, cfg = _init(folder)
    assert cfg.build.output == shipped.build.output and cfg.harness.command == shipped.harness.command
    assert (cfg.build.command == ("make",)) == (name == "make_project")
    if name == "python_harness":       # poly.cu built for the harness to load; fir.cu is NVRTC's, no build
        assert cfg.build.sources == shipped.build.sources == ("src/poly.cu",)
        assert cfg.build.nvcc_flags == shipped.build.nvcc_flags
        assert "compiled by harness.py when it runs (NVRTC), no build: src/fir.cu" in (folder / "gpa.toml").read_text()
    assert all(k in open(folder / "gpa.toml").read() for k in shipped.profile.kernels)
