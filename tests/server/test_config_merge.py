"""Editor settings -> gpa.toml keys, layer order, and trust that only the user side can grant."""

from __future__ import annotations

from gpa_lsp.server import trust
from gpa_lsp.server.config_merge import editor_settings_to_mapping, effective_config


def test_camel_case_nested_and_dotted_settings_map_to_toml_keys():
    got = editor_settings_to_mapping({
        "build": {"nvccFlags": ["-O2"], "command": None},
        "profile.collector": "replay",
        "server": {"debounceMs": 50, "runOnSave": False},
        "harness": {"env": {"MY_VAR": "1"}},
        "paths": {"sourceMap": {"/build/machine/src": "."}},
        "lineHeat": True, "trustedWorkspaces": ["/x"],
    })
    assert got == {"build": {"nvcc_flags": ["-O2"]}, "profile": {"collector": "replay"},
                   "server": {"debounce_ms": 50, "run_on_save": False}, "harness": {"env": {"MY_VAR": "1"}},
                   "paths": {"source_map": {"/build/machine/src": "."}}}


def test_layers_file_then_init_options_then_editor(tmp_path):
    (tmp_path / "gpa.toml").write_text('[build]\nnvcc_flags = ["-O3"]\n[advice]\nwarning = 1.5\n')
    eff = effective_config(tmp_path, {"advice": {"warning": 1.3}}, {"advice": {"information": 1.05}})
    assert eff.error is None and eff.settings_error is None
    assert eff.config.build.nvcc_flags == ("-O3",)
    assert eff.config.advice.warning == 1.3 and eff.config.advice.information == 1.05


def test_bad_file_keeps_the_editor_layers_and_reports_the_line(tmp_path):
    (tmp_path / "gpa.toml").write_text('[profile]\nkernels = ["k"]\nsampling_period = 2\n')
    eff = effective_config(tmp_path, None, {"server": {"debounceMs": 10}})
    assert eff.error is not None and eff.error.line == 3 and eff.error.path.endswith("gpa.toml")
    assert eff.config.server.debounce_ms == 10            # still applied over the defaults


def test_bad_editor_setting_is_reported_and_ignored(tmp_path):
    eff = effective_config(tmp_path, None, {"profile": {"collector": "magic"}})
    assert eff.settings_error is not None and "magic" in eff.settings_error.message
    assert eff.config.profile.collector == "cupti"


def test_trust_only_from_the_user_side(tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    (ws / "gpa.toml").write_text("trusted = true\n")          # a workspace file cannot grant it
    assert not trust.is_trusted(ws, {}, {})
    assert trust.is_trusted(ws, {"trusted": True}, {})
    assert trust.is_trusted(ws / "sub", {}, {"trustedWorkspaces": [str(tmp_path)]})   # inside a trusted folder
    assert not trust.is_trusted(tmp_path, {}, {"trustedWorkspaces": [str(ws)]})       # not the parent
    assert not trust.is_trusted(ws, {"trusted": "yes"}, {})                          # only a real true
