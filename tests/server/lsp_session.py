"""Start the real gpa-lsp server as a subprocess and drive it like an editor (pytest-lsp client)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities
from pytest_lsp.client import make_test_lsp_client

ROOT = Path(__file__).resolve().parents[2]


def make_client():
    client = make_test_lsp_client()
    client.status = []            # gpa/status params, in order
    client.line_heat = {}         # uri -> lines
    client.registrations = []
    client.applied_edits = []

    @client.feature("gpa/status")
    def on_status(ls, params):
        ls.status.append(_plain(params))

    @client.feature("gpa/lineHeat")
    def on_heat(ls, params):
        p = _plain(params)
        ls.line_heat[p["uri"]] = p["lines"]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(ls, params: types.RegistrationParams):
        ls.registrations.extend(params.registrations)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(ls, params: types.ApplyWorkspaceEditParams):
        ls.applied_edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_lens_refresh(ls, params):
        return None

    return client


def _plain(obj: Any) -> Any:
    """pygls hands custom notifications over as named tuples: make them dicts (recursively)."""
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


@asynccontextmanager
async def session(root: Path, *, editor: str = "visual-studio-code", trusted: bool | None = None,
                  settings: dict | None = None, user_settings: dict | None = None, cache: Path | None = None,
                  env: dict[str, str] | None = None, folders: dict[Path, dict | None] | None = None):
    """An initialized client connected to a fresh server whose workspace is ``root``.

    ``folders``: a multi-root workspace instead, each folder with its own scoped settings (or None).
    """
    client = make_client()
    server_env = dict(os.environ)
    server_env["GPA_LSP_CACHE"] = str(cache or (root.parent / f".gpa-cache-{root.name}"))
    server_env["PYTHONPATH"] = str(ROOT) + os.pathsep + server_env.get("PYTHONPATH", "")
    server_env["GPA_SKIP_GPU_CHECK"] = "1"   # the harnesses here are dummies: run them with no GPU
    server_env.update(env or {})
    await client.start_io(sys.executable, "-m", "gpa_lsp.server", env=server_env)
    # scoped (workspace) settings and the user-level ones: trust is read only from the latter
    if folders is None:
        folders = {root: settings}
    for folder, scoped in folders.items():
        if scoped is not None:
            client.set_configuration({"gpa": scoped}, scope_uri=from_fs_path(str(folder)))
    client.set_configuration({"gpa": user_settings or {}})
    init: dict[str, Any] = {}
    if trusted is not None:
        init["trusted"] = trusted
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(editor),
        root_uri=from_fs_path(str(root)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in folders],
        initialization_options=init))
    try:
        yield client
    finally:
        try:
            if client._server is None or client._server.returncode is None:   # a test may have ended it
                await asyncio.wait_for(client.shutdown_session(), 10)
        finally:
            await client.stop()


async def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def open_doc(client, path: Path, language: str = "cuda-cpp") -> str:
    uri = from_fs_path(str(path))
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=language, version=1, text=path.read_text())))
    return uri


def save_doc(client, path: Path, text: str | None = None) -> None:
    if text is not None:
        path.write_text(text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=from_fs_path(str(path)))))


def states(client) -> list[str]:
    return [_plain(s).get("state") for s in client.status]


def change_folders(client, added: list[Path] = (), removed: list[Path] = ()) -> None:
    """workspace/didChangeWorkspaceFolders, as an editor sends it when folders are added or removed."""
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in added],
            removed=[types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in removed])))


ANALYSIS_MODULES = ("gpa_lsp.analysis.advisor", "gpa_lsp.analysis.optimizers", "gpa_lsp.analysis.blame",
                    "gpa_lsp.verify.runner")
MODULE_DUMP = Path(__file__).resolve().parent / "module_dump"


def module_dump_env(folder: Path) -> dict[str, str]:
    """Server environment under which every Python process writes its module names to ``folder``
    (tests/server/module_dump/sitecustomize.py): see :func:`modules_of`."""
    return {"PYTHONPATH": os.pathsep.join([str(MODULE_DUMP), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "GPA_TEST_MODULES_DIR": str(folder)}


def modules_of(folder: Path, pid: int) -> set[str]:
    """The modules process ``pid`` had imported 0.1 s ago (empty until it wrote them)."""
    try:
        return set((folder / f"{pid}.modules").read_text().split())
    except OSError:
        return set()
