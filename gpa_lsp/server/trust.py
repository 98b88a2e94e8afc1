"""Whether the server may build and run code of a workspace folder.

Building runs the project's build command and profiling runs its harness:
both execute whatever the workspace says. So trust comes only from the
user's side: the editor's workspace trust (``initializationOptions.trusted``)
or the user-level setting ``gpa.trustedWorkspaces`` (a list of folders, read
without a scope so a folder's own settings cannot add itself). A file inside
the workspace (gpa.toml, .vscode/settings.json seen as scoped settings) never
grants it. Untrusted folders still show recorded results (a replayed bundle).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from pygls.uris import to_fs_path

ENABLE_HINT = ("profiling is off in untrusted folders: trust the workspace in your editor "
               "(VS Code: Manage Workspace Trust), or add the folder to the user setting "
               "gpa.trustedWorkspaces; recorded results are still shown")


def _norm(p: str) -> Path:
    if p.startswith("file://"):
        p = to_fs_path(p) or p
    return Path(os.path.expanduser(p)).resolve()


def trusted_folders(user_settings: Mapping[str, Any] | None) -> tuple[Path, ...]:
    """Folders listed in the user-level ``gpa.trustedWorkspaces``."""
    if not user_settings:
        return ()
    value = user_settings.get("trustedWorkspaces", user_settings.get("trusted_workspaces"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        return ()
    return tuple(_norm(v) for v in value if isinstance(v, str) and v and "\0" not in v)   # NUL: not a path


def is_trusted(root: str | Path, init_options: Mapping[str, Any] | None,
               user_settings: Mapping[str, Any] | None) -> bool:
    """True when the client said so, or the folder is inside a user-trusted folder."""
    if isinstance(init_options, Mapping) and init_options.get("trusted") is True:
        return True
    root_path = _norm(str(root))
    for folder in trusted_folders(user_settings):
        if root_path == folder or folder in root_path.parents:
            return True
    return False
