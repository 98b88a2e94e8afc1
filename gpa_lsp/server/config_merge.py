"""The effective configuration of one workspace folder, from three layers.

defaults < gpa.toml / [tool.gpa] < initializationOptions.settings < the
editor's ``gpa`` section (workspace/configuration). Editor keys are camelCase
(``build.nvccFlags``) and may come nested or dotted; both map onto gpa.toml's
snake_case keys. Client-only keys (``lineHeat``) and the user-side trust list
(``trustedWorkspaces``) are not project settings and are dropped here.

An invalid project file does not stop the server: the layers above it still
apply over the defaults, and the error is returned so that the caller can put
a diagnostic on the offending line of that file.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import config as gpa_config
from ..errors import ConfigError

log = logging.getLogger("gpa_lsp.server")
CLIENT_ONLY_KEYS = frozenset({"lineHeat", "trustedWorkspaces", "trusted", "line_heat", "trusted_workspaces"})


def plain(obj: Any) -> Any:
    """JSON-like data from what pygls hands over (it turns untyped objects into named tuples)."""
    if hasattr(obj, "_asdict"):
        return {k: plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, Mapping):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def snake(name: str) -> str:
    """``nvccFlags`` -> ``nvcc_flags``; already-snake names pass through."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def editor_settings_to_mapping(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Editor settings (nested or dotted camelCase) -> a gpa.toml-shaped mapping.

    ``{"build.nvccFlags": [...], "profile": {"collector": "replay"}}`` ->
    ``{"build": {"nvcc_flags": [...]}, "profile": {"collector": "replay"}}``.
    ``None`` values (VS Code's unset settings) are dropped so they do not
    override lower layers.
    """
    out: dict[str, Any] = {}
    if settings is not None and not isinstance(settings, Mapping):
        raise ConfigError(f"the settings must be an object of gpa settings, not {type(settings).__name__}",
                          "fix the gpa settings in the editor")

    def conflict(path: list[str]) -> ConfigError:
        name = ".".join(path)
        return ConfigError(f"the setting '{name}' is given both a value and keys below it ('{name}.…')",
                           f"keep one of them: '{name}' is a section of settings, e.g. '{name}.collector'"
                           if len(path) == 1 else "keep one of them")

    def put(path: list[str], value: Any) -> None:
        if value is None or path[0] in CLIENT_ONLY_KEYS:
            return
        if isinstance(value, Mapping) and not (len(path) >= 2 and path[-1] in ("env", "source_map")):
            for k, v in value.items():
                put(path + [snake(str(k)) if path[-1:] != ["source_map"] else k], v)
            return
        node = out
        for i, part in enumerate(path[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):      # {"profile": "x", "profile.collector": ...}
                raise conflict(path[:i + 1])
        if isinstance(node.get(path[-1]), dict) and not (len(path) >= 2 and path[-1] in ("env", "source_map")):
            raise conflict(path)               # {"profile.collector": ..., "profile": "x"}
        node[path[-1]] = dict(value) if isinstance(value, Mapping) else value

    for key, value in (settings or {}).items():
        key = str(key)
        parts = [snake(p) for p in key.split(".")]
        if parts[0] in ("gpa",) and len(parts) > 1:   # some clients send the section prefix
            parts = parts[1:]
        if key in CLIENT_ONLY_KEYS or parts[0] in CLIENT_ONLY_KEYS:
            continue
        put(parts, value)
    # A section given as a bare value is not a table: from_mapping says so ("[profile] must be a
    # table"); unset values (null) were dropped above.
    return out


@dataclass(frozen=True)
class EffectiveConfig:
    config: gpa_config.Config
    error: ConfigError | None = None       # the project file's error (shown on its line)
    settings_error: ConfigError | None = None  # the editor layers' error (shown as a message)


def effective_config(folder: str | Path, init_settings: Mapping[str, Any] | None = None,
                     editor_settings: Mapping[str, Any] | None = None) -> EffectiveConfig:
    """Merge the layers for ``folder``. Never raises ConfigError: errors are returned."""
    folder = Path(folder).resolve()
    error: ConfigError | None = None
    try:
        cfg = gpa_config.load(folder)
    except ConfigError as exc:
        error = exc
        cfg = gpa_config.Config(root=str(folder))
    except OSError as exc:
        error = ConfigError(f"cannot read the project configuration: {exc}", "check the file's permissions")
        cfg = gpa_config.Config(root=str(folder))
    except Exception as exc:  # noqa: BLE001 - one folder's file must never stop the server (issue 16)
        log.exception("reading the configuration of %s", folder)
        error = ConfigError(f"cannot read the project configuration: {type(exc).__name__}: {exc}",
                            "please report this with the server log")
        cfg = gpa_config.Config(root=str(folder))
    settings_error: ConfigError | None = None
    for layer, name in ((init_settings, "initializationOptions.settings"), (editor_settings, "the editor's gpa settings")):
        if not layer:
            continue
        try:
            cfg = gpa_config.from_mapping(editor_settings_to_mapping(layer), base=cfg)
        except ConfigError as exc:
            settings_error = ConfigError(f"{name}: {exc.message}", exc.hint or "fix the setting; it is ignored until then")
        except RecursionError:      # settings nested thousands deep
            settings_error = ConfigError(f"{name}: nested too deeply", "fix the setting; it is ignored until then")
    return EffectiveConfig(cfg, error, settings_error)


def config_file_of(folder: str | Path) -> Path | None:
    """The project file that holds (or would hold) the settings of ``folder``."""
    return gpa_config.find_config(folder)
