"""Typed project settings: ``gpa.toml`` or ``[tool.gpa]`` in ``pyproject.toml``.

Layers, lowest first: defaults < project file < initializationOptions <
editor settings (``workspace/configuration`` section ``gpa``). Paths in the
project file are relative to the file's folder. Trust is *not* a key here:
it comes only from the user's side (see gpa_lsp.server), never the workspace.

Example ``gpa.toml``::

    [build]
    sources = ["stencil.cu"]          # or: command = ["make", "app"]
    nvcc_flags = ["-O3", "-arch=sm_90"]
    output = "build/stencil"

    [harness]
    command = ["build/stencil"]       # argument list; a string is run by the shell
    timeout = 120
    env = { N = "4096" }

    [profile]
    collector = "cupti"               # "cupti" | "ncu" | "replay"
    bundle = "recorded/stencil.cupti.gpabundle"   # replayed when collector = "replay" or no GPU
    kernels = ["stencil"]             # substrings of kernel names; empty = all
    launch_count = 5                  # ncu: launches to profile per kernel
    sampling_period = 12              # CUPTI: log2 cycles, 5..31
    min_samples = 10000               # CUPTI: fewer on the hottest kernel -> one more run at a
                                      # shorter period (the advice says "low confidence" below it)
    throughput = true                 # CUPTI: one more run for unit throughput (bounds estimates by
                                      # the memory system; skipped with a note when no counters)
    throughput_collector = "auto"     # that run: "cupti" (Range Profiler in the injection library,
                                      # first launch of each sampled kernel), "ncu" (ncu --metrics),
                                      # "auto" (cupti, else ncu)
    throughput_share = 0.9            # cupti: measure the hottest kernels that hold this share of the
                                      # samples (1.0: every sampled kernel)
    throughput_cache = true           # cupti: reuse a kernel's unit throughput while its code, launch
                                      # and harness are the same (.gpa/throughput-cache.json)

    [advice]
    warning = 1.10                    # estimated speedup at or above -> warning
    information = 1.05                # ... -> information, else hint (marginal: under the estimates'
                                      # own error, docs/optimizers.md "Marginal advice")

    [server]
    run_on_save = true
    debounce_ms = 500
    throughput_on_save = true         # after a save, show the advice, then measure unit
                                      # throughput ([profile] throughput_collector) and show it bounded

    [verify]
    top = 3                           # mechanical fixes tried per analysis (by estimate)
    budget_s = 60                     # wall time for timing them on the GPU
    on_save = true                    # in the editor, after the sampled advice is shown
    pairs = 5                         # interleaved (original, variant) runs, at least 5

    [paths]
    source_map = { "/build/machine/src" = "." }
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

COLLECTORS = ("cupti", "ncu", "replay")
THROUGHPUT_COLLECTORS = ("auto", "cupti", "ncu")
# Ranges of the numeric keys (each also finite): wider than any sensible use, narrow enough that
# the value is still a duration or count the code can wait for or allocate.
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_DEBOUNCE_MS = 60_000
MAX_LAUNCH_COUNT = 100_000
MAX_ADVICE = 1000


@dataclass(frozen=True)
class BuildConfig:
    command: tuple[str, ...] | str | None = None
    sources: tuple[str, ...] = ()
    nvcc_flags: tuple[str, ...] = ("-O3", "-arch=sm_90")
    output: str | None = None
    nvcc: str | None = None


@dataclass(frozen=True)
class HarnessConfig:
    command: tuple[str, ...] | str | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = 300.0


@dataclass(frozen=True)
class ProfileConfig:
    collector: str = "cupti"
    bundle: str | None = None
    kernels: tuple[str, ...] = ()
    launch_count: int = 5
    sampling_period: int = 12
    # samples wanted on the hottest kernel: a run that brings fewer is repeated once at a shorter
    # period (down to 2^7, kept only when CUPTI dropped under 5%); 0: never repeat
    min_samples: int = 10_000
    ncu: str | None = None
    throughput: bool = True
    # who measures unit throughput for the CUPTI collector: CUPTI's Range Profiler in a counters
    # run of the injection library (profile/cupti/counters.py), ncu --metrics, or auto (CUPTI,
    # and ncu when CUPTI could not)
    throughput_collector: str = "auto"
    # the CUPTI counters run measures the hottest kernels holding this share of the samples (at least
    # the hottest one; 1.0: every sampled kernel): each kernel measured costs its replay passes
    # (0.25-0.7 s on the H100), and unit throughput only bounds the estimates of the kernel it was
    # measured on (benchmarks/profiling/README.md)
    throughput_share: float = 0.9
    # the CUPTI counters run is skipped for kernels measured before with the same code, launch,
    # device and harness (profile/cupti/throughput_cache.py): false measures every time (a harness
    # whose input files changed what the kernel does)
    throughput_cache: bool = True


# advice whose figure (measured, else estimated) is under this gain is *marginal*: shown, as a hint in
# the editor and marked in the reports, but not recommended. Two reasons, neither from a case: a change
# "helps" when it gains 5% or more (issue 15's definition, benchmarks/accuracy); and the estimates'
# own median error is of that order (4-5% over the calibration cases' measured pairs), so an estimate
# under it cannot tell a gain from none. The editor's [advice] information threshold defaults to it.
RECOMMENDED = 1.05


@dataclass(frozen=True)
class AdviceConfig:
    warning: float = 1.10
    information: float = RECOMMENDED      # under it advice is marginal (above)
    max_per_kernel: int = 8


@dataclass(frozen=True)
class ServerConfig:
    run_on_save: bool = True
    debounce_ms: int = 500
    # the unit-throughput pass costs a second harness run ([profile] throughput_collector; under
    # CUPTI it ends once the sampled kernels are measured, benchmarks/profiling): in the save loop
    # it runs after the sampled advice is shown, and refines it; false: never on save
    throughput_on_save: bool = True


@dataclass(frozen=True)
class VerifyConfig:
    """Trying fixes before ranking them (gpa_lsp/verify): compiled and compared in a scratch copy,
    then timed interleaved with the original on the GPU of a trusted workspace."""
    top: int = 3
    budget_s: float = 60.0
    on_save: bool = True
    pairs: int = 5


@dataclass(frozen=True)
class Config:
    root: str = "."                   # folder of the config file (or the workspace root)
    build: BuildConfig = field(default_factory=BuildConfig)
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    advice: AdviceConfig = field(default_factory=AdviceConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    source_map: tuple[tuple[str, str], ...] = ()
    path: str | None = None           # the file it was read from

    def resolve(self, p: str) -> str:
        """A path from the config, made absolute against the config's folder."""
        return str((Path(self.root) / os.path.expanduser(p)).resolve())

    @property
    def bundle_path(self) -> str | None:
        return self.resolve(self.profile.bundle) if self.profile.bundle else None


_SECTIONS = {"build": BuildConfig, "harness": HarnessConfig, "profile": ProfileConfig,
             "advice": AdviceConfig, "server": ServerConfig, "verify": VerifyConfig}


def _line_of(text: str, section: str, key: str | None) -> int | None:
    """1-based line of ``key`` inside ``[section]`` (or of the section header)."""
    lines = text.splitlines()
    in_section = False
    header = re.compile(r"^\s*\[(?:tool\.gpa\.)?" + re.escape(section) + r"\]\s*$")
    for i, raw in enumerate(lines, 1):
        if raw.strip().startswith("["):
            in_section = bool(header.match(raw))
            if in_section and key is None:
                return i
            continue
        if in_section and key is not None and re.match(r"^\s*" + re.escape(key) + r"\s*=", raw):
            return i
    return None


def _coerce(section: str, cls: type, data: Mapping[str, Any], text: str, path: str | None) -> Any:
    known = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"unknown key '{key}' in [{section}]", f"known keys: {', '.join(known)}",
                              path, _line_of(text, section, key))
        default = getattr(cls(), key)
        try:
            _no_nul(value)
            values[key] = _convert(key, value, default)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[{section}] {key}: {exc}", "", path, _line_of(text, section, key)) from None
    obj = cls(**values)
    _validate(section, obj, text, path)
    return obj


def _no_nul(value: Any) -> None:
    """A NUL in a path, flag or command makes every use of it (open, exec) raise ValueError."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else (value,)
    if any(isinstance(v, str) and "\0" in v for v in items):
        raise ValueError("must not contain a NUL character")


def _convert(key: str, value: Any, default: Any) -> Any:
    if key == "command":
        # an empty program (``""``, ``[""]``) would run nothing, or ``sh -c ""``, and "succeed"
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value) and value[0].strip():
            return tuple(value)
        raise TypeError("must be a non-empty list of strings whose first item names the program "
                        "(or one non-empty shell string)")
    if key == "env":
        if not isinstance(value, dict) or not all(isinstance(v, (str, int, float)) for v in value.values()):
            raise TypeError("must be a table of strings")
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TypeError("must be true or false")
        return value
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("must be a number")
        if not math.isfinite(value):        # TOML allows inf and nan; no setting means them
            raise ValueError(f"must be a finite number, not {value}")
        if isinstance(default, int) and not float(value).is_integer():
            raise ValueError(f"must be a whole number, not {value}")
        return type(default)(value)
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError("must be a list of strings")
        return tuple(value)
    if value is not None and not isinstance(value, str):
        raise TypeError("must be a string")
    return value


def _validate(section: str, obj: Any, text: str, path: str | None) -> None:
    def bad(key: str, msg: str, hint: str = "") -> ConfigError:
        return ConfigError(f"[{section}] {key}: {msg}", hint, path, _line_of(text, section, key))

    if isinstance(obj, ProfileConfig):
        if obj.collector not in COLLECTORS:
            raise bad("collector", f"'{obj.collector}' is not a collector", "use one of: " + ", ".join(COLLECTORS))
        if obj.throughput_collector not in THROUGHPUT_COLLECTORS:
            raise bad("throughput_collector", f"'{obj.throughput_collector}' is not a throughput collector",
                      "use one of: " + ", ".join(THROUGHPUT_COLLECTORS))
        if not 5 <= obj.sampling_period <= 31:
            raise bad("sampling_period", "must be between 5 and 31 (log2 of cycles)")
        if not 1 <= obj.launch_count <= MAX_LAUNCH_COUNT:
            raise bad("launch_count", f"must be between 1 and {MAX_LAUNCH_COUNT}")
        if not 0 <= obj.min_samples <= 10_000_000:
            raise bad("min_samples", "must be between 0 and 10000000")
        if not 0.0 < obj.throughput_share <= 1.0:
            raise bad("throughput_share", "must be a share of the samples, above 0 and at most 1")
    if isinstance(obj, HarnessConfig) and not 0 < obj.timeout <= MAX_TIMEOUT_S:
        raise bad("timeout", f"must be positive seconds, at most {MAX_TIMEOUT_S:.0f} (a week)")
    if isinstance(obj, AdviceConfig):
        if not (1.0 <= obj.information <= obj.warning):
            raise bad("warning", "thresholds must satisfy 1.0 <= information <= warning")
        if not 0 <= obj.max_per_kernel <= MAX_ADVICE:
            raise bad("max_per_kernel", f"must be between 0 and {MAX_ADVICE}")
    if isinstance(obj, ServerConfig) and not 0 <= obj.debounce_ms <= MAX_DEBOUNCE_MS:
        raise bad("debounce_ms", f"must be between 0 and {MAX_DEBOUNCE_MS} (milliseconds)")
    if isinstance(obj, VerifyConfig):
        if not 0 <= obj.top <= 20:
            raise bad("top", "must be between 0 and 20")
        if not 0 < obj.budget_s <= 3600:       # also refuses nan and inf
            raise bad("budget_s", "must be positive seconds, at most 3600")
        if not 5 <= obj.pairs <= 100:
            raise bad("pairs", "must be between 5 and 100 (the interval needs at least 5 pairs)")


def from_mapping(data: Mapping[str, Any], *, root: str = ".", text: str = "", path: str | None = None,
                 base: Config | None = None) -> Config:
    """Merge a mapping (a TOML table, initializationOptions or editor settings) over ``base``."""
    cfg = base or Config(root=root)
    if path is not None:
        cfg = replace(cfg, path=path, root=root)
    for key, value in data.items():
        if key in _SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(f"[{key}] must be a table", "", path, _line_of(text, key, None))
            current = getattr(cfg, key)
            merged = {f.name: getattr(current, f.name) for f in fields(current)}
            fresh = _coerce(key, _SECTIONS[key], value, text, path)
            for k in value:
                merged[k] = getattr(fresh, k)
            cfg = replace(cfg, **{key: type(current)(**merged)})
        elif key == "paths":
            smap = value.get("source_map", {}) if isinstance(value, Mapping) else None
            if not isinstance(smap, Mapping):
                raise ConfigError("[paths] source_map must be a table OLD = NEW", "", path, _line_of(text, "paths", "source_map"))
            try:
                _no_nul(list(smap) + list(smap.values()))
            except ValueError as exc:
                raise ConfigError(f"[paths] source_map: {exc}", "", path, _line_of(text, "paths", "source_map")) from None
            cfg = replace(cfg, source_map=cfg.source_map + tuple((str(k), str(v)) for k, v in smap.items()))
        elif key in ("trusted", "trust"):
            continue  # trust never comes from here; see gpa_lsp.server.trust
        else:
            raise ConfigError(f"unknown section '{key}'", "known sections: " + ", ".join([*_SECTIONS, "paths"]),
                              path, _line_of(text, key, None))
    return cfg


def read_text(p: Path) -> str:
    """The file as UTF-8 text (TOML's only encoding; a leading BOM is allowed). Another encoding is a
    ConfigError on the line of the first byte that is not UTF-8, never a UnicodeDecodeError."""
    data = p.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{p.name} is UTF-16 text; TOML files must be UTF-8", "save it as UTF-8", str(p), 1)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{p.name} is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line} "
                          "(TOML files must be UTF-8)", "save it as UTF-8 (e.g. a Latin-1 comment)", str(p), line) from None


def parse_toml(text: str, p: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ConfigError(f"{p.name} is not valid TOML: {exc}", "fix the syntax", str(p), int(m.group(1)) if m else None) from None
    except RecursionError:      # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{p.name} nests arrays or tables too deeply", "fix the syntax", str(p)) from None


def load_file(path: str | os.PathLike) -> Config:
    """Read gpa.toml, or [tool.gpa] of a pyproject.toml. Errors carry the file and line."""
    p = Path(path)
    text = read_text(p)
    data = parse_toml(text, p)
    if p.name == "pyproject.toml":
        data = data.get("tool", {})
        data = data.get("gpa", {}) if isinstance(data, Mapping) else {}
        if not isinstance(data, Mapping):
            raise ConfigError("[tool.gpa] must be a table", "", str(p), _line_of(text, "tool", "gpa"))
    return from_mapping(data, root=str(p.parent.resolve()), text=text, path=str(p))


def find_config(folder: str | os.PathLike) -> Path | None:
    """gpa.toml in ``folder``, else a pyproject.toml there that has [tool.gpa]."""
    d = Path(folder)
    if (d / "gpa.toml").is_file():
        return d / "gpa.toml"
    pp = d / "pyproject.toml"
    if pp.is_file():
        try:
            tool = parse_toml(read_text(pp), pp).get("tool", {})
            if isinstance(tool, Mapping) and "gpa" in tool:
                return pp
        except ConfigError:
            return pp  # let load_file report the error (syntax, encoding) on its line
        except OSError:
            return None
    return None


def load(folder: str | os.PathLike) -> Config:
    """The project's configuration for a workspace folder (defaults when it has none)."""
    found = find_config(folder)
    return load_file(found) if found else Config(root=str(Path(folder).resolve()))
