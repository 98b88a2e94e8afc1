"""Quick fixes: the fix of one advice as an LSP code action and workspace edit (the code-action
feature and ``gpa.applyAndMeasure`` both use it), and in a trusted folder the same fix "and
measure". ``register`` wires ``textDocument/codeAction``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls.uris import from_fs_path

from ...analysis.model import Advice, KernelReport, to_json
from ...config import BuildConfig
from ...verify.model import short_device
from .. import actions
from ..config_merge import config_file_of, plain
from ..results import PathResolver


CODE_ACTION_KINDS = [types.CodeActionKind.QuickFix]


def fix_action(ls, folder, path: Path, kernel: KernelReport, adv: Advice,
               diag: types.Diagnostic | None) -> types.CodeAction | None:
    """The quick fix for one advice, or None when its edit would not be well formed, or when it
    was tried and the edited sources did not compile. Tried fixes say what they measured."""
    v = adv.verification
    if v is not None and v.status in ("no_build", "no_fix"):
        return None
    fix = to_json(adv.fix)
    edit = fix_workspace_edit(ls, folder, path, fix)
    if edit is None:
        return None
    title = actions.fix_title(fix)
    if v is not None and v.status == "measured" and v.speedup is not None:
        title += f" (measured {v.speedup:.2f}x, est. {adv.estimated_speedup:.2f}x, {short_device(v.device)})"
    elif v is not None and v.status == "unchanged":
        title += " (the compiler already does this: no change)"
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diag] if diag is not None else None, edit=edit,
                            is_preferred=not (v is not None and v.no_gain))


def fix_workspace_edit(ls, folder, path: Path, fix: dict[str, Any]) -> types.WorkspaceEdit | None:
    if fix.get("kind") == "fast_math":
        cfg = config_file_of(folder.root)
        target = cfg or folder.root / "gpa.toml"
        text = "\n".join(ls.lines_of(target)) + "\n" if cfg is not None else None
        edits = actions.fast_math_edits(text, target.name == "pyproject.toml",
                                        str((fix.get("params") or {}).get("flag", "--use_fast_math")),
                                        BuildConfig().nvcc_flags)
        if edits is None:
            return None
        uri = from_fs_path(str(target))
        if cfg is None:
            return types.WorkspaceEdit(document_changes=[
                types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)),
                types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                                       edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})
    target = PathResolver(folder.root)(fix.get("file")) if fix.get("file") else path
    target = target or path
    uri = from_fs_path(str(target))
    line0 = None
    if fix.get("line"):
        line0 = ls.tracker.current(uri, int(fix["line"]) - 1)
        if line0 is None:
            return None           # the line was edited since the analysis
    edits = actions.source_fix_edits(fix, ls.lines_of(target), line0)
    if not edits:
        return None
    return types.WorkspaceEdit(changes={uri: edits})


def diagnostic_of(diagnostics: Sequence[types.Diagnostic], kernel: KernelReport, adv: Advice) -> types.Diagnostic | None:
    """The editor's diagnostic for this advice among those a code action request carries."""
    for d in diagnostics:
        data = plain(d.data)
        if d.source == "gpa" and d.code == adv.optimizer and isinstance(data, dict) and data.get("kernel") == kernel.name:
            return d
    return None


def measure_action(action: types.CodeAction, uri: str, diag: types.Diagnostic, diag_json: Any) -> types.CodeAction:
    """``action`` "and measure": a command-only action running ``gpa.applyAndMeasure`` on ``diag``
    (``diag_json``: the diagnostic as JSON, which the command takes back)."""
    return types.CodeAction(
        title=action.title + " and measure", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
        command=types.Command(title="apply and measure", command="gpa.applyAndMeasure",
                              arguments=[{"uri": uri, "diagnostic": diag_json, "fixIndex": 0}]))


def register(ls) -> None:
    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=CODE_ACTION_KINDS, resolve_provider=False))
    def code_action(ls, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        found = ls.view_of(uri)
        if found is None:
            return []
        folder, path, view = found
        origs = set()
        for line in range(params.range.start.line, params.range.end.line + 1):
            o = ls.tracker.original(uri, line)
            if o is not None:
                origs.add(o + 1)
        out: list[types.CodeAction] = []
        for kernel, adv in view.advice:
            if adv.fix is None or adv.location is None or adv.location.line not in origs:
                continue
            diag = diagnostic_of(params.context.diagnostics, kernel, adv)
            action = fix_action(ls, folder, path, kernel, adv, diag)
            if action is None:
                continue
            out.append(action)
            if folder.trusted and diag is not None:
                out.append(measure_action(action, uri, diag, ls.protocol._converter.unstructure(diag)))
        return out
