"""The quick fix of one advice as an LSP code action and workspace edit (the code-action feature
and ``gpa.applyAndMeasure`` both use it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ..analysis.model import Advice, KernelReport, to_json
from ..config import BuildConfig
from ..verify.model import short_device
from . import actions
from .config_merge import config_file_of
from .results import PathResolver


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
