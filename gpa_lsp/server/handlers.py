"""LSP methods -> the server's folders and the feature modules. Nothing else lives here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from . import hover, lenses, protocol, report as report_md
from .cache import is_source
from .code_actions import fix_action
from .config_merge import plain
from .measure import apply_and_measure
from .pipeline import shutdown_pool
from .trust import ENABLE_HINT

CODE_ACTION_KINDS = [types.CodeActionKind.QuickFix]


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri).resolve()


def register(ls) -> None:  # noqa: C901 - a flat list of handlers reads best
    @ls.feature(types.INITIALIZE)
    def initialize(ls, params: types.InitializeParams) -> None:
        opts = plain(params.initialization_options)
        ls.init_options = dict(opts) if isinstance(opts, dict) else {}
        roots = [_path(f.uri) for f in (params.workspace_folders or [])]
        if not roots and params.root_uri:
            roots = [_path(params.root_uri)]
        elif not roots and params.root_path:
            roots = [Path(params.root_path).resolve()]
        for r in roots:
            ls.add_folder(r)

    @ls.feature(types.INITIALIZED)
    async def initialized(ls, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        if ls.cap("workspace", "did_change_configuration", "dynamic_registration"):
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(id="gpa-config", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                       register_options=types.DidChangeConfigurationRegistrationOptions(section="gpa"))]))
            except Exception:  # noqa: BLE001 - not fatal: settings are still read at start
                pass
        ls.start_watching()
        await asyncio.gather(*(ls.start_folder(f) for f in list(ls.folders.values())))

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls, params: types.DidChangeConfigurationParams) -> None:
        for folder in list(ls.folders.values()):
            old = folder.config
            await ls.fetch_settings(folder)
            if not ls.is_open(folder):
                continue            # removed from the workspace meanwhile
            ls.recompute_config(folder)
            ls.publish(folder)
            if folder.analysis is None and folder.config.bundle_path and old.bundle_path != folder.config.bundle_path:
                await ls.start_folder(folder)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(ls, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed or ():
            ls.remove_folder(_path(f.uri))
        await asyncio.gather(*(ls.open_folder(_path(f.uri)) for f in params.event.added or ()))

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls, params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            ls.on_disk_change(_path(change.uri))   # the editor's file watcher; watchdog may see it too

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        ls.tracker.opened(params.text_document.uri, params.text_document.text)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        moved = ls.tracker.changed(uri, params.content_changes, doc.source)
        folder = ls.folder_of(uri)
        if moved and folder is not None and folder.analysis is not None:
            path = _path(uri)
            if folder.analysis.view(path) is not None:
                ls.publish_file(folder, path)
                protocol.send(ls.protocol, ls.line_heat(folder, path))

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        folder = ls.folder_of(path)
        if folder is None:
            return
        if path.name in ("gpa.toml", "pyproject.toml"):
            ls.on_disk_change(path)
        elif is_source(path) and folder.config.server.run_on_save:
            ls.runs.request(folder)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        folder = ls.folder_of(uri)
        if folder is None or folder.analysis is None:
            return None
        path = _path(uri)
        view = folder.analysis.view(path)
        if view is None:
            return None
        orig = ls.tracker.original(uri, params.position.line)
        if orig is None:
            return None
        stats = view.lines.get(orig + 1, [])
        adv = [(k, a) for k, a in view.advice if a.location and a.location.line == orig + 1]
        rep = folder.analysis.report
        note = ""
        if folder.analysis.outcome.from_cache:
            note = "from an earlier run"
        if ls.file_is_stale(folder, path):
            note = "the file changed since this profile: save to refresh"
        md = hover.hover_markdown(stats, adv, rep.total_samples if rep else 0, note)
        if md is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md),
                           range=types.Range(types.Position(params.position.line, 0),
                                             types.Position(params.position.line + 1, 0)))

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        folder = ls.folder_of(uri)
        if folder is None or folder.analysis is None:
            return []
        view = folder.analysis.view(_path(uri))
        if view is None:
            return []
        out: list[types.CodeLens] = []
        for k in view.kernels:
            cur = ls.tracker.current(uri, (k.line or 1) - 1)
            if cur is not None:
                out += lenses.kernel_lenses(k, cur, folder.uri, stale=folder.analysis.outcome.stale)
        return out

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=CODE_ACTION_KINDS, resolve_provider=False))
    def code_action(ls, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        folder = ls.folder_of(uri)
        if folder is None or folder.analysis is None:
            return []
        path = _path(uri)
        view = folder.analysis.view(path)
        if view is None:
            return []
        origs = set()
        for line in range(params.range.start.line, params.range.end.line + 1):
            o = ls.tracker.original(uri, line)
            if o is not None:
                origs.add(o + 1)
        out: list[types.CodeAction] = []
        for kernel, adv in view.advice:
            if adv.fix is None or adv.location is None or adv.location.line not in origs:
                continue
            diag = next((d for d in params.context.diagnostics
                         if d.source == "gpa" and d.code == adv.optimizer
                         and isinstance(plain(d.data), dict) and plain(d.data).get("kernel") == kernel.name), None)
            action = fix_action(ls, folder, path, kernel, adv, diag)
            if action is None:
                continue
            out.append(action)
            if folder.trusted and diag is not None:
                out.append(types.CodeAction(
                    title=action.title + " and measure", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                    command=types.Command(title="apply and measure", command="gpa.applyAndMeasure",
                                          arguments=[{"uri": uri, "diagnostic": ls.protocol._converter.unstructure(diag),
                                                      "fixIndex": 0}])))
        return out

    @ls.command("gpa.profile")
    async def cmd_profile(ls, *args: Any) -> dict[str, Any]:
        folder = ls.folder_of(_arg_uri(args))
        if folder is None:
            return {"started": False, "message": "no workspace folder"}
        if not folder.trusted:
            ls.status(folder, "untrusted", "profiling is off: " + _hint())
            ls.runs.request(folder, 0, why="command")   # replays the recorded bundle
            return {"started": False, "reason": "untrusted", "message": _hint()}
        ls.runs.request(folder, 0)
        return {"started": True}

    @ls.command("gpa.cancel")
    def cmd_cancel(ls, *args: Any) -> dict[str, Any]:
        cancelled = False
        for folder in ([ls.folder_of(_arg_uri(args))] if _arg_uri(args) else list(ls.folders.values())):
            if folder is not None and folder.runner is not None:
                cancelled = folder.runner.cancel() or cancelled
        return {"cancelled": cancelled}

    @ls.command("gpa.report")
    def cmd_report(ls, *args: Any) -> dict[str, Any]:
        folder = ls.folder_of(_arg_uri(args))
        if folder is None:
            return {"markdown": report_md.report_markdown(None)}
        a = folder.analysis
        return {"markdown": report_md.report_markdown(
            a.report if a else None, a.outcome.note if a else "", folder.cache.history(),
            stale=bool(a and a.outcome.stale))}

    @ls.command("gpa.applyAndMeasure")
    async def cmd_apply_and_measure(ls, *args: Any) -> dict[str, Any]:
        arg = plain(args[0]) if args else {}
        return await apply_and_measure(ls, arg)

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls, params: Any = None) -> None:
        for folder in ls.folders.values():
            if folder.runner is not None:
                folder.runner.cancel()
        ls.stop_watching()
        shutdown_pool()

    @ls.feature(types.EXIT)
    def on_exit(ls, params: Any = None) -> None:
        # the `gpa-lsp` process leaves at once (server.terminate): pygls would wait for its stdin
        # reader, which returns only when the editor closes the pipe, and the interpreter for the
        # run threads; a server driven in-process (tests) is left to its owner
        if ls.owns_process:
            from .server import terminate  # a real cycle: server imports this module
            terminate(ls, 0 if getattr(ls.protocol, "_shutdown", False) else 1)


def _hint() -> str:
    return ENABLE_HINT


def _arg_uri(args: Any) -> str | None:
    args = plain(list(args)) if args else args
    if args and isinstance(args[0], str):
        return args[0]
    if args and isinstance(args[0], dict):
        return args[0].get("uri") or args[0].get("rootUri")
    return None
