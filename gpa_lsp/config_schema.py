"""A JSON Schema for gpa.toml, generated from the dataclasses of :mod:`gpa_lsp.config`.

Editors that read JSON Schemas for TOML (taplo / Even Better TOML) complete and check
gpa.toml with it: put ``#:schema ./path/to/gpa.schema.json`` on the file's first line, or
associate it in the editor's settings. The keys, their types and defaults come from the
dataclasses; the descriptions from ``DESCRIPTIONS`` (else the key's comment in the example of
config.py's docstring); the bounds are the ones ``config._validate`` enforces (``_BOUNDS``,
checked against it in tests/test_config_schema.py).

Regenerate the shipped copy with ``python -m gpa_lsp.config_schema`` (a test fails while it is
stale).
"""

from __future__ import annotations

import json
import re
import sys
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from . import config as _config

SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "gpa.schema.json"
SCHEMA_ID = "https://gpa-lsp.invalid/gpa.schema.json"   # an id, not a place to fetch

# what each key means (a key the dataclasses gain without a line here falls back to its comment
# in config.py's example, and tests/test_config_schema.py asks for one)
DESCRIPTIONS = {
    ("build", "command"): "A build command instead of sources: an argument list, or one string run by the shell.",
    ("build", "sources"): "The .cu files nvcc builds (relative to this file); or set command.",
    ("build", "nvcc_flags"): "Flags for nvcc (gpa adds -lineinfo).",
    ("build", "output"): "The executable nvcc writes (relative to this file).",
    ("build", "nvcc"): "The nvcc to build with (default: nvcc on PATH or under CUDA_HOME).",
    ("harness", "command"): "The program to profile: an argument list, or one string run by the shell.",
    ("harness", "cwd"): "The folder the harness runs in (relative to this file; default: this file's folder).",
    ("harness", "env"): "Environment variables for the harness, e.g. { N = \"4096\" }.",
    ("harness", "timeout"): "Seconds before a harness run is stopped.",
    ("profile", "collector"): "Who samples: cupti (CUPTI PC sampling through an injection library), ncu (Nsight "
                              "Compute), or replay (only the recorded bundle, no GPU).",
    ("profile", "bundle"): "The recorded bundle (relative to this file): replayed when collector = \"replay\" "
                           "or without a GPU.",
    ("profile", "kernels"): "Substrings of the names of the kernels to profile (CUPTI samples only their "
                            "launches, at most 32 names); empty: all.",
    ("profile", "launch_count"): "ncu: launches profiled per kernel.",
    ("profile", "sampling_period"): "CUPTI: the sampling period, log2 of cycles (5..31).",
    ("profile", "min_samples"): "CUPTI: samples wanted on the hottest kernel; a run that brings fewer is "
                                "repeated once at a shorter period, and advice below it says \"low "
                                "confidence\" (0: never repeat).",
    ("profile", "ncu"): "The Nsight Compute command line tool to run (default: ncu on PATH).",
    ("profile", "throughput"): "CUPTI: one more run for unit throughput, which bounds the estimates by the "
                               "memory system (skipped with a note when no counters are available).",
    ("profile", "throughput_collector"): "Who measures unit throughput for the CUPTI collector: cupti (CUPTI's "
                                         "Range Profiler, first launch of each sampled kernel, the run ends once "
                                         "they are measured), ncu (ncu --metrics), or auto (cupti, else ncu).",
    ("profile", "throughput_share"): "CUPTI counters run: unit throughput is measured for the hottest kernels "
                                     "that together hold this share of the samples (at least the hottest; 1: "
                                     "every sampled kernel); the others' estimates are not bounded by it.",
    ("profile", "throughput_cache"): "CUPTI counters run: reuse a kernel's unit throughput measured before with "
                                     "the same code, launch, device and harness (.gpa/throughput-cache.json) "
                                     "instead of measuring it again; false: measure every time.",
    ("advice", "warning"): "An estimated speedup at or above this is shown as a warning.",
    ("advice", "information"): "At or above this (and below warning): information; below: a hint.",
    ("advice", "max_per_kernel"): "At most this many advice per kernel.",
    ("server", "run_on_save"): "Build, run and profile when a source is saved (in a trusted workspace).",
    ("server", "debounce_ms"): "Milliseconds to wait after a save before starting.",
    ("server", "throughput_on_save"): "After a save, show the advice, then measure unit throughput ([profile] "
                                      "throughput_collector) and show it bounded; false: never on save.",
    ("verify", "top"): "Mechanical fixes tried per analysis, highest estimate first (0: none).",
    ("verify", "budget_s"): "Seconds of wall time for timing the fixes on the GPU.",
    ("verify", "on_save"): "In the editor: try the fixes after a save, once the sampled advice is shown.",
    ("verify", "pairs"): "Interleaved (original, variant) runs timed per fix (at least 5).",
}

_BOUNDS: dict[tuple[str, str], dict[str, Any]] = {
    ("profile", "collector"): {"enum": list(_config.COLLECTORS)},
    ("profile", "throughput_collector"): {"enum": list(_config.THROUGHPUT_COLLECTORS)},
    ("profile", "sampling_period"): {"minimum": 5, "maximum": 31},
    ("profile", "launch_count"): {"minimum": 1},
    ("profile", "min_samples"): {"minimum": 0, "maximum": 10_000_000},
    ("profile", "throughput_share"): {"exclusiveMinimum": 0, "maximum": 1},
    ("verify", "top"): {"minimum": 0, "maximum": 20},
    ("verify", "budget_s"): {"exclusiveMinimum": 0, "maximum": 3600},
    ("verify", "pairs"): {"minimum": 5, "maximum": 100},
    ("harness", "timeout"): {"exclusiveMinimum": 0},
    ("advice", "warning"): {"minimum": 1.0},
    ("advice", "information"): {"minimum": 1.0},
    ("server", "debounce_ms"): {"minimum": 0},
}

_SECTION_DOC = {
    "build": "How to build the program (nvcc with -lineinfo is added by gpa).",
    "harness": "The program run under the profiler.",
    "profile": "What and how to profile, and the recorded bundle to replay.",
    "advice": "How advice is shown.",
    "server": "The language server's save loop.",
    "verify": "Trying the fixes before ranking them: compiled and compared in a scratch copy, then timed "
              "interleaved with the original on the GPU (of a trusted workspace).",
    "paths": "Where sources recorded on another machine live here.",
}


def _doc_comments() -> dict[tuple[str, str], tuple[str, str]]:
    """(section, key) -> (comment, example value) from the example in config.py's docstring."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    section, last = None, None
    for raw in (_config.__doc__ or "").splitlines():
        line = raw.strip()
        m = re.match(r"^\[([\w.]+)\]$", line)
        if m:
            section, last = m.group(1), None
            continue
        m = re.match(r"^(\w+)\s*=\s*(.*?)\s*(?:#\s*(.*))?$", line)
        if m and section:
            last = (section, m.group(1))
            out[last] = (m.group(3) or "", m.group(2))
            continue
        m = re.match(r"^#\s*(.*)$", line)
        if m and last and raw.startswith(" " * 20):     # a comment continued on the next line
            comment, value = out[last]
            out[last] = ((comment + " " + m.group(1)).strip(), value)
            continue
        if not line:
            last = None
    return out


def _strings(min_items: int = 0) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if min_items:
        s["minItems"] = min_items
    return s


def _field_schema(section: str, name: str, hint: Any, default: Any) -> dict[str, Any]:
    """The JSON Schema of one key, following what ``config._convert`` accepts."""
    if name == "command":
        s: dict[str, Any] = {"anyOf": [_strings(1), {"type": "string", "minLength": 1}]}
    elif name == "env":
        s = {"type": "object", "additionalProperties": {"type": ["string", "number"]}}
    elif hint is bool:
        s = {"type": "boolean"}
    elif hint is int:
        s = {"type": "integer"}
    elif hint is float:
        s = {"type": "number"}
    elif typing.get_origin(hint) is tuple:
        s = {"anyOf": [_strings(), {"type": "string"}]}      # one string is taken as a list of one
    elif hint == (str | None) or hint is str:
        s = {"type": "string"}
    else:                                                     # pragma: no cover - a new kind of key
        raise TypeError(f"no schema for [{section}] {name}: {hint!r}")
    s.update(_BOUNDS.get((section, name), {}))
    if default is not None and default is not MISSING:
        if isinstance(default, tuple):
            default = [list(v) if isinstance(v, tuple) else v for v in default]
            if name == "env":
                default = {}
        s["default"] = default
    return s


def config_schema() -> dict[str, Any]:
    docs = _doc_comments()
    sections: dict[str, Any] = {}
    for section, cls in _config._SECTIONS.items():
        hints = typing.get_type_hints(cls)
        props = {}
        for f in fields(cls):
            default = f.default if f.default is not MISSING else (
                f.default_factory() if f.default_factory is not MISSING else MISSING)  # type: ignore[misc]
            s = _field_schema(section, f.name, hints[f.name], default)
            comment, _ = docs.get((section, f.name), ("", ""))
            text = DESCRIPTIONS.get((section, f.name)) or comment
            if text:
                s = {"description": text[0].upper() + text[1:], **s}
            props[f.name] = s
        sections[section] = {"type": "object", "description": _SECTION_DOC.get(section, ""),
                             "properties": props, "additionalProperties": False}
    comment, _ = docs.get(("paths", "source_map"), ("", ""))
    sections["paths"] = {
        "type": "object", "description": _SECTION_DOC["paths"], "additionalProperties": False,
        "properties": {"source_map": {
            "type": "object", "additionalProperties": {"type": "string"},
            "description": comment or ("Build-time path prefix = the folder it is here (relative to this file), "
                                       "e.g. { \"/build/machine/src\" = \".\" }.")}}}
    for key in ("trusted", "trust"):
        sections[key] = {"description": "Ignored: whether to run the build and harness is the user's "
                                        "choice (editor workspace trust), never the project's.",
                         "deprecated": True}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "gpa.toml",
        "description": "gpa-lsp project settings (or [tool.gpa] in pyproject.toml). Generated from "
                       "gpa_lsp/config.py by gpa_lsp/config_schema.py.",
        "type": "object",
        "properties": sections,
        "additionalProperties": False,
    }


def schema_text() -> str:
    return json.dumps(config_schema(), indent=2) + "\n"


def write_schema(path: str | Path = SCHEMA_PATH) -> Path:
    path = Path(path)
    path.write_text(schema_text(), encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover
    print(write_schema(sys.argv[1] if len(sys.argv) > 1 else SCHEMA_PATH))
