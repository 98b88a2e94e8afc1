"""Configuration errors, trust, and build errors, end to end through a real server process."""

from __future__ import annotations

import textwrap

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from .lsp_session import open_doc, save_doc, session, states, wait_for

KERNEL_OK = textwrap.dedent("""\
    #include <cstdio>
    __global__ void scale(float *out, const float *in, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0 * in[i];
    }
    int main() { return 0; }
""")


def _workspace(tmp_path, toml: str, source: str = KERNEL_OK):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "gpa.toml").write_text(textwrap.dedent(toml))
    (root / "k.cu").write_text(source)
    return root


@pytest.mark.parametrize("editor", ["visual-studio-code", "neovim"])
async def test_bad_config_is_a_diagnostic_on_its_line(tmp_path, editor):
    root = _workspace(tmp_path, """\
        [build]
        sources = ["k.cu"]

        [profile]
        collector = "gpu-magic"
        """)
    async with session(root, editor=editor, trusted=True) as client:
        uri = from_fs_path(str(root / "gpa.toml"))
        diags = await wait_for(lambda: client.diagnostics.get(uri), 30, "a diagnostic on gpa.toml")
        assert len(diags) == 1
        d = diags[0]
        assert d.range.start.line == 4              # collector = "gpu-magic" (0-based)
        assert d.severity == types.DiagnosticSeverity.Error
        assert "gpu-magic" in d.message and "cupti" in d.message   # says what is allowed

        # fixing the file on disk clears the diagnostic (watchdog / didSave)
        (root / "gpa.toml").write_text('[build]\nsources = ["k.cu"]\n[profile]\ncollector = "replay"\n')
        save_doc(client, root / "gpa.toml")
        await wait_for(lambda: not any("gpu-magic" in d.message for d in client.diagnostics.get(uri, [])), 30,
                       "the diagnostic to clear")
        # collector = replay with no bundle: the run says so, on the [profile] line
        diags = await wait_for(lambda: client.diagnostics.get(uri), 30, "the missing-bundle diagnostic")
        assert "no recorded bundle" in diags[0].message and diags[0].range.start.line == 2


async def test_untrusted_workspace_runs_nothing(tmp_path):
    root = _workspace(tmp_path, """\
        [build]
        sources = ["k.cu"]
        output = "build/k"

        [harness]
        command = ["touch", "HARNESS_RAN"]

        [profile]
        collector = "cupti"
        """)
    # a workspace-scoped setting that tries to trust itself must be ignored
    async with session(root, settings={"trustedWorkspaces": [str(root)]}) as client:
        await wait_for(lambda: "untrusted" in states(client), 30, "the untrusted status")
        # the message follows the status (start_folder sends both, in that order)
        await wait_for(lambda: any("gpa.trustedWorkspaces" in m.message for m in client.messages), 10,
                       "the message saying how to trust the folder")
        open_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="gpa.profile"))
        import asyncio
        await asyncio.sleep(2.0)                      # longer than the debounce
        assert not (root / "build").exists(), "nothing may be built in an untrusted folder"
        assert not (root / "HARNESS_RAN").exists(), "the harness must not run in an untrusted folder"
        assert "building" not in states(client) and "profiling" not in states(client)
        assert sum("gpa.trustedWorkspaces" in m.message for m in client.messages) == 1   # said once


async def test_build_errors_become_diagnostics(tmp_path):
    broken = KERNEL_OK.replace("2.0 * in[i]", "2.0 * in[i] + undefined_symbol")
    root = _workspace(tmp_path, """\
        [build]
        sources = ["k.cu"]
        output = "build/k"

        [harness]
        command = ["build/k"]

        [profile]
        collector = "cupti"

        [server]
        debounce_ms = 50
        """, broken)
    async with session(root, user_settings={"trustedWorkspaces": [str(root)]}) as client:
        uri = open_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        diags = await wait_for(lambda: client.diagnostics.get(uri), 120, "nvcc diagnostics")
        errors = [d for d in diags if d.severity == types.DiagnosticSeverity.Error]
        assert errors and all(d.source == "nvcc" for d in errors)
        assert errors[0].range.start.line == 3
        assert "undefined_symbol" in errors[0].message
        assert "building" in states(client)
        # fixing the source clears them on the next save
        save_doc(client, root / "k.cu", KERNEL_OK)
        await wait_for(lambda: not [d for d in client.diagnostics.get(uri, []) if d.source == "nvcc"], 120,
                       "the nvcc diagnostics to clear")


async def test_settings_change_is_re_read(tmp_path):
    """VS Code: didChangeConfiguration is registered dynamically; new thresholds re-grade the advice."""
    import shutil
    from .conftest import WORKSPACE
    root = tmp_path / "relax"
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns("build", ".gpa"))
    async with session(root, settings={}) as client:
        uri = open_doc(client, root / "app.cu")
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        assert any(r.method == "workspace/didChangeConfiguration" for r in client.registrations)
        assert any(d.severity == types.DiagnosticSeverity.Warning for d in diags)
        client.set_configuration({"gpa": {"advice": {"warning": 9.0, "information": 8.0}}}, scope_uri=from_fs_path(str(root)))
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        after = await wait_for(lambda: [d for d in client.diagnostics.get(uri, [])]
                               if all(d.severity == types.DiagnosticSeverity.Hint for d in client.diagnostics.get(uri, []))
                               else None, 20, "all advice to become hints")
        assert len(after) == len(diags)
