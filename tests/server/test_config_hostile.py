"""Config files and editor settings a user can write (issue 16, items 4 and 9): each is a ConfigError on
its line (or a settings message); the folder keeps the other layers, other folders keep working, and
`gpa advise` prints a message, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pygls.uris import from_fs_path

from gpa_lsp.cli import main
from gpa_lsp.config import load_file
from gpa_lsp.errors import ConfigError
from gpa_lsp.server.config_merge import effective_config

from .lsp_session import session, wait_for

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _toml(tmp_path: Path, body: bytes | str) -> Path:
    p = tmp_path / "gpa.toml"
    p.write_bytes(body if isinstance(body, bytes) else body.encode())
    return p


def test_latin1_comment_is_an_error_on_its_line_and_the_editor_layers_still_apply(tmp_path):
    _toml(tmp_path, "[build]\nsources = [\"k.cu\"]\n# r\xe9sum\xe9 of the flags\n".encode("latin-1"))
    eff = effective_config(tmp_path, None, {"server": {"debounceMs": 10}})
    assert eff.error is not None and eff.error.line == 3 and eff.error.path.endswith("gpa.toml")
    assert "not UTF-8" in eff.error.message and "0xe9" in eff.error.message
    assert eff.config.server.debounce_ms == 10


def test_utf16_file_is_an_error(tmp_path):
    _toml(tmp_path, "[server]\ndebounce_ms = 5\n".encode("utf-16"))
    eff = effective_config(tmp_path)
    assert eff.error is not None and "UTF-16" in eff.error.message and eff.error.line == 1


def test_utf8_with_a_byte_order_mark_is_read(tmp_path):
    _toml(tmp_path, b"\xef\xbb\xbf[server]\ndebounce_ms = 5\n")
    assert load_file(tmp_path / "gpa.toml").server.debounce_ms == 5


@pytest.mark.parametrize("section,line,needle", [
    ("[server]\ndebounce_ms = inf", "debounce_ms", "finite"),
    ("[server]\ndebounce_ms = -inf", "debounce_ms", "finite"),
    ("[server]\ndebounce_ms = 1.5", "debounce_ms", "whole number"),
    ("[server]\ndebounce_ms = 100000000", "debounce_ms", "between 0 and 60000"),
    ("[harness]\ntimeout = nan", "timeout", "finite"),
    ("[harness]\ntimeout = 1e300", "timeout", "at most"),
    ("[harness]\ntimeout = 0", "timeout", "positive"),
    ("[advice]\nmax_per_kernel = -1", "max_per_kernel", "between 0 and"),
    ("[advice]\nwarning = inf", "warning", "finite"),
    ("[profile]\nlaunch_count = 1e12", "launch_count", "between 1 and"),
    ('[harness]\ncommand = ""', "command", "non-empty"),
    ('[harness]\ncommand = "   "', "command", "non-empty"),
    ("[harness]\ncommand = []", "command", "non-empty"),
    ('[harness]\ncommand = ["", "x"]', "command", "non-empty"),
    ('[build]\ncommand = ""', "command", "non-empty"),
    ('[build]\nnvcc_flags = ["-O3\\u0000"]', "nvcc_flags", "NUL"),
    ('[paths]\nsource_map = { "/a\\u0000" = "." }', "source_map", "NUL"),
])
def test_values_out_of_range_are_errors_on_their_line(tmp_path, section, line, needle):
    _toml(tmp_path, "# project\n" + section + "\n")
    with pytest.raises(ConfigError) as err:
        load_file(tmp_path / "gpa.toml")
    assert err.value.line == 3, err.value.message
    assert line in err.value.message and needle in err.value.message, err.value.message


def test_deeply_nested_toml_is_an_error(tmp_path):
    _toml(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nests arrays or tables too deeply|not valid TOML"):
        load_file(tmp_path / "gpa.toml")


def test_broken_pyproject_is_reported_not_raised(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.gpa]\n# caf\xe9\n")
    eff = effective_config(tmp_path)
    assert eff.error is not None and eff.error.line == 2


@pytest.mark.parametrize("settings", [
    {"profile": "x", "profile.collector": "replay"},
    {"profile.collector": "replay", "profile": "x"},
    {"profile": {"collector": "replay"}, "profile.collector.x": 1},
])
def test_settings_that_give_a_section_both_a_value_and_keys(tmp_path, settings):
    eff = effective_config(tmp_path, None, settings)
    assert eff.settings_error is not None and "both a value and keys" in eff.settings_error.message
    assert eff.config.profile.collector == "cupti"       # the layer is ignored, the defaults stay


@pytest.mark.parametrize("settings,needle", [
    ({"profile": "x"}, "[profile] must be a table"),
    ({"server": {"debounceMs": float("inf")}}, "finite"),
    ({"harness": {"timeout": float("nan")}}, "finite"),
    ({"harness": {"command": ""}}, "non-empty"),
    ({"advice": {"maxPerKernel": -3}}, "max_per_kernel"),
])
def test_bad_editor_settings_are_a_message(tmp_path, settings, needle):
    eff = effective_config(tmp_path, None, settings)
    assert eff.settings_error is not None and needle in eff.settings_error.message, eff.settings_error


def test_settings_that_are_not_an_object(tmp_path):
    eff = effective_config(tmp_path, ["gpa"], None)     # type: ignore[arg-type]
    assert eff.settings_error is not None and "must be an object" in eff.settings_error.message


def test_gpa_advise_prints_a_message_for_a_latin1_config(tmp_path, capsys):
    _toml(tmp_path, "[profile]\n# \xe9\nbundle = \"x.gpabundle\"\n".encode("latin-1"))
    assert main(["advise", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith(f"gpa: error: {tmp_path / 'gpa.toml'}:2: gpa.toml is not UTF-8 text")


async def test_a_broken_folder_does_not_stop_the_others(tmp_path):
    """initialize with one folder whose gpa.toml is UTF-16 and one with debounce_ms = inf: both get a
    diagnostic on their file, and a good folder beside them is analysed."""
    good = tmp_path / "transpose_banks"
    shutil.copytree(KERNELS / "transpose_banks", good, ignore=shutil.ignore_patterns("build", ".gpa"))
    if (KERNELS / "common").is_dir():
        shutil.copytree(KERNELS / "common", tmp_path / "common")
    utf16, inf = tmp_path / "utf16", tmp_path / "inf"
    utf16.mkdir()
    inf.mkdir()
    _toml(utf16, "[server]\ndebounce_ms = 5\n".encode("utf-16"))
    _toml(inf, "[profile]\ncollector = \"replay\"\n[server]\ndebounce_ms = inf\n")
    smap = {"paths": {"sourceMap": {str((KERNELS / "transpose_banks").resolve()): "."}}}
    async with session(good, folders={utf16: None, inf: None, good: smap}) as client:
        await wait_for(lambda: any(s.get("root") == from_fs_path(str(good)) and s.get("result")
                                   for s in client.status), 120, "the good folder analysed")
        for folder, line in ((utf16, 0), (inf, 3)):
            uri = from_fs_path(str(folder / "gpa.toml"))
            diags = await wait_for(lambda: client.diagnostics.get(uri), 30, f"the diagnostic of {folder.name}")
            assert diags[0].range.start.line == line
        assert any(uri.endswith(".cu") and d for uri, d in client.diagnostics.items())
