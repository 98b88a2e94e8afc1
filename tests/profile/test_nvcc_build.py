import shutil
from pathlib import Path

import pytest

from gpa_lsp.build import CompilerMessage, arch_of, build, parse_messages
from gpa_lsp.config import Config, from_mapping
from gpa_lsp.errors import BuildError

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc is part of the test machine")


def _config(tmp_path, **build):
    return from_mapping({"build": build}, root=str(tmp_path))


@needs_nvcc
def test_build_ok_adds_lineinfo(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) {\n  int unused = 3;\n  a[threadIdx.x] = 1.f;\n}\n"
                                   "int main() { return 0; }\n")
    res = build(_config(tmp_path, sources=["k.cu"], nvcc_flags=["-O3", "-arch=sm_90"], output="build/k"))
    assert res.ok and Path(res.output).is_file() and res.output == str(tmp_path / "build" / "k")
    assert "-lineinfo" in res.command
    warn = [m for m in res.messages if m.severity == "warning"]
    assert warn and warn[0].file == str(tmp_path / "k.cu") and warn[0].line == 2 and "unused" in warn[0].text
    assert res.check() is res


@needs_nvcc
def test_build_errors_become_messages(tmp_path):
    (tmp_path / "bad.cu").write_text(
        "__global__ void k(float* a) {\n  int unused = 3;\n  a[threadIdx.x] = undefined_thing;\n}\nint main() { return 0; }\n")
    res = build(_config(tmp_path, sources=["bad.cu"], nvcc_flags=["-arch=sm_90"]))
    assert not res.ok and res.returncode != 0
    err = res.errors[0]
    assert err.file == str(tmp_path / "bad.cu") and err.line == 3 and err.column == 20
    assert "undefined_thing" in err.text
    with pytest.raises(BuildError) as exc:
        res.check()
    assert "bad.cu:3" in exc.value.message and "undefined_thing" in exc.value.output


def test_custom_command_failure(tmp_path):
    cfg = _config(tmp_path, command="echo 'main.cu:7:3: error: expected ; before }' >&2; exit 1")
    res = build(cfg)
    assert not res.ok
    assert res.messages == (CompilerMessage(str(tmp_path / "main.cu"), 7, 3, "error", "expected ; before }"),)


def test_nothing_to_build(tmp_path):
    with pytest.raises(BuildError, match="nothing to build"):
        build(Config(root=str(tmp_path)))


def test_parse_tool_and_linker_lines():
    text = ("ptxas error   : Entry function '_Z1kv' uses too much shared data\n"
            "/usr/bin/ld: cannot find -lfoo: No such file or directory\n"
            "k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n")
    msgs = parse_messages(text, "/p")
    assert msgs[0] == CompilerMessage(None, None, None, "error", "ptxas: Entry function '_Z1kv' uses too much shared data")
    assert msgs[1].text.startswith("ld: cannot find -lfoo")
    assert msgs[2] == CompilerMessage("/p/k.cu", 4, None, "warning", 'variable "x" was declared but never referenced')


def test_arch_of():
    assert arch_of(["-O3", "-arch=sm_90"]) == "sm_90"
    assert arch_of(["-arch", "sm_90a"]) == "sm_90a"
    assert arch_of(["-gencode", "arch=compute_90,code=sm_90"]) == "sm_90"
    assert arch_of([]) == "sm_90"
