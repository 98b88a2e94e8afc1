"""`gpa init` from the editor (issue 18): ``gpa.init`` on a CMake project with no gpa.toml.

A VS Code user with only the .vsix has no ``gpa`` on the PATH: the command is how the folder gets
its gpa.toml. The test opens a copy of examples/cmake_project without its gpa.toml (untrusted: no
build, the recorded bundle is replayed as on a machine without a GPU), runs the command, and checks
what the editor receives: one ``workspace/applyEdit`` creating gpa.toml with `gpa init`'s text, the
file on disk, a configuration that builds with CMake, and then the advice on rowsum.cu's lines.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from gpa_lsp.config import load_file
from gpa_lsp.profile.bundle import read_bundle

from .lsp_session import session, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cmake_project"


def _project(tmp_path: Path) -> tuple[Path, dict]:
    root = tmp_path / "cmake_project"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".gpa", "gpa.toml"))
    src = read_bundle(EXAMPLE / "recorded" / "cupti.gpabundle").sources[0]
    recorded_root = src["abspath"][: -len(src["path"])].rstrip("/")   # where the device built it
    return root, {"paths": {"sourceMap": {recorded_root: "."}}}


async def test_gpa_init_creates_the_config_through_the_editor_and_the_folder_gets_advice(tmp_path):
    root, settings = _project(tmp_path)
    assert not (root / "gpa.toml").exists()
    async with session(root, trusted=False, settings=settings) as client:
        res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gpa.init", arguments=[from_fs_path(str(root))]))
        assert res["created"] is True and res["path"] == str(root / "gpa.toml"), res
        (edit,) = client.applied_edits
        create, change = edit.document_changes
        assert isinstance(create, types.CreateFile) and create.uri == from_fs_path(str(root / "gpa.toml"))
        assert create.options.overwrite is False
        text = change.edits[0].new_text
        assert (root / "gpa.toml").read_text() == text
        cfg = load_file(root / "gpa.toml")
        assert "cmake --build build" in cfg.build.command and cfg.build.output == "build/rowsum"
        assert cfg.profile.bundle == "recorded/cupti.gpabundle"
        # the folder is set up from it: the recorded profile's advice lands on rowsum.cu
        uri = from_fs_path(str(root / "src" / "rowsum.cu"))
        diags = await wait_for(lambda: client.diagnostics.get(uri), 90, "advice on rowsum.cu after gpa.init")
        assert any(d.source == "gpa" for d in diags)

        # a second run keeps the file as it is and says so
        again = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gpa.init", arguments=[from_fs_path(str(root))]))
        assert again["created"] is False and "already exists" in again["message"]
        assert len(client.applied_edits) == 1 and (root / "gpa.toml").read_text() == text
