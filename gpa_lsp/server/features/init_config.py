"""`gpa init` in the editor: the command ``gpa.init`` writes a commented gpa.toml for a workspace folder.

What a VS Code user with only the .vsix needs to start on a project (issue 18): no ``gpa`` on the
PATH, so the server runs ``python -m gpa_lsp.cli init DIR --stdout`` in a child process (it
asks the driver for the GPU's sm, which the server process is better without; doctor.py does the
same), and hands the text to the editor as a ``workspace/applyEdit`` that creates ``gpa.toml``: the
file is the user's, made through an edit the editor applies (and shows). When the editor has
applied it, the server writes the same text to disk if the editor left the new file empty (an
applied edit of a created file may stay unsaved in the editor's buffer), as apply-and-measure
does for its fix; the folder's watcher then reloads the configuration as for any edit of it.
A folder that has a gpa.toml keeps it: nothing is replaced.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ... import procs
from ..config_merge import config_file_of
from ..protocol import InitResult, result
from .commands import arg_uri
from .doctor import doctor_env

INIT_TIMEOUT_S = 60.0       # scanning the folder's sources and asking the driver for the GPU


def init_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "gpa_lsp.cli", "init", str(root), "--stdout"]


def render_config(root: Path) -> tuple[str | None, str]:
    """(the gpa.toml text, "") or (None, why not): `gpa init --stdout` in a child process."""
    try:
        proc = procs.run_tool(init_argv(root), timeout=INIT_TIMEOUT_S, env=doctor_env())
    except subprocess.TimeoutExpired:
        return None, f"gpa init took more than {INIT_TIMEOUT_S:.0f} s on {root}"
    except OSError as exc:
        return None, f"gpa init could not run: {exc}"
    if proc.returncode != 0 or not proc.stdout.strip():
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}, no output"])[-1]
        return None, f"gpa init failed on {root}: {why}"
    return proc.stdout, ""


def create_edit(target: Path, text: str) -> types.WorkspaceEdit:
    """Create ``target`` (failing if it exists) and insert ``text`` into it."""
    uri = from_fs_path(str(target)) or target.as_uri()
    start = types.Position(line=0, character=0)
    return types.WorkspaceEdit(document_changes=[
        types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False)),
        types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                               edits=[types.TextEdit(range=types.Range(start=start, end=start), new_text=text)]),
    ])


async def init_folder(ls, uri: str | None) -> InitResult:
    folder = ls.folder_of(uri)
    if folder is None:
        return InitResult(False, "no workspace folder: open the project's folder first")
    root = Path(folder.root)
    existing = config_file_of(root)
    if existing is not None:
        return InitResult(False, f"{existing} already exists; it was left as it is (edit it, or delete it and "
                                 "run GPA: Create gpa.toml again)", str(existing))
    text, why = await asyncio.get_running_loop().run_in_executor(None, render_config, root)
    if text is None:
        return InitResult(False, why)
    target = root / "gpa.toml"
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=create_edit(target, text), label="GPA: create gpa.toml"))
    if not applied.applied:
        return InitResult(False, f"the editor did not create {target}: {applied.failure_reason or 'refused'}")
    try:
        if not target.exists() or target.stat().st_size == 0:
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        return InitResult(False, f"could not write {target}: {exc.strerror or exc}")
    return InitResult(True, f"wrote {target}: check its TODOs; the folder is set up from it now "
                            "(a trusted folder builds and profiles on save, any folder shows a recorded bundle)",
                      str(target))


def register(ls) -> None:
    @ls.command("gpa.init")
    async def cmd_init(ls, *args: Any) -> dict[str, Any]:
        return result(await init_folder(ls, arg_uri(args)))
