"""Verification results kept with the recording: ``verification.json`` inside the ``.gpabundle``.

A result is valid for one experiment: the texts of the files the fix edits (before the edit),
the fix itself and the build flags (``experiment_key``), on one device. A replay with no GPU
shows the result recorded for its experiment, preferring the bundle's own device. The entry is
added by rewriting the zip (every other entry copied byte for byte), so the bundle stays
readable by older readers, which ignore unknown entries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Mapping

from .model import StaticDiff, Verification

ENTRY = "verification.json"
VERSION = 1
MAX_ENTRY_BYTES = 8 * 1024 * 1024
MAX_RESULTS = 2000


def experiment_key(texts: Mapping[str, str], fix: Mapping[str, Any], flags: tuple[str, ...]) -> str:
    """Content of the edited files (by file name: the recording's paths differ between machines),
    the fix without its paths, the build flags."""
    doc = {
        "sources": sorted((Path(p).name, hashlib.sha256(t.encode()).hexdigest()) for p, t in texts.items()),
        "fix": {"kind": fix.get("kind"), "line": fix.get("line"),
                "params": {k: v for k, v in sorted((fix.get("params") or {}).items())}},
        "flags": list(flags),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _to_json(v: Verification) -> dict:
    return dataclasses.asdict(v)


def _from_json(d: Mapping[str, Any]) -> Verification | None:
    try:
        fields = {f.name for f in dataclasses.fields(Verification)}
        kw = {k: v for k, v in d.items() if k in fields}
        diff = kw.get("diff")
        if isinstance(diff, dict):
            dfields = {f.name for f in dataclasses.fields(StaticDiff)}
            dd = {k: v for k, v in diff.items() if k in dfields}
            for k in ("vanished", "appeared"):
                dd[k] = tuple(tuple(x) for x in dd.get(k, ()))
            for k in ("registers", "spills", "instructions"):
                if k in dd:
                    dd[k] = tuple(dd[k])
            kw["diff"] = StaticDiff(**dd)
        for k in ("original_ns", "variant_ns"):
            if k in kw:
                kw[k] = tuple(float(x) for x in kw[k])
        v = Verification(**kw)
        return v if v.status in ("measured", "static", "unchanged", "no_build", "no_fix") else None
    except (TypeError, ValueError):
        return None


def _is_json(path: str | os.PathLike) -> bool:
    """A plain ``.json`` store (the editor's cache for replayed bundles) instead of a bundle entry."""
    return str(path).endswith(".json")


def read(bundle: str | os.PathLike) -> list[Verification]:
    """Every stored result of a bundle or .json store ([] when there is none or it is unreadable)."""
    try:
        if _is_json(bundle):
            if os.path.getsize(bundle) > MAX_ENTRY_BYTES:
                return []
            doc = json.loads(Path(bundle).read_text(encoding="utf-8"))
        else:
            with zipfile.ZipFile(bundle) as z:
                info = z.getinfo(ENTRY)
                if info.file_size > MAX_ENTRY_BYTES:
                    return []
                doc = json.loads(z.read(info))
    except (KeyError, OSError, zipfile.BadZipFile, ValueError, RecursionError):
        return []
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("results"), list):
        return []
    out = []
    for d in doc["results"][:MAX_RESULTS]:
        if isinstance(d, dict) and (v := _from_json(d)) is not None:
            out.append(v)
    return out


def lookup(results: list[Verification], key: str, device: str = "") -> Verification | None:
    """The result for ``key``: on ``device`` when there is one, else the best-informed (measured first)."""
    mine = [v for v in results if v.key == key]
    if not mine:
        return None
    same = [v for v in mine if device and v.device == device]
    pool = same or mine
    return max(pool, key=lambda v: (v.status == "measured", v.pairs))


def write(bundle: str | os.PathLike, new: list[Verification]) -> None:
    """Add ``new`` to the bundle's results (replacing results of the same key and device)."""
    bundle = Path(bundle)
    keep = [v for v in read(bundle) if not any(v.key == n.key and v.device == n.device for n in new)]
    doc = {"version": VERSION, "results": [_to_json(v) for v in (keep + list(new))[-MAX_RESULTS:]]}
    if _is_json(bundle):
        bundle.parent.mkdir(parents=True, exist_ok=True)
        tmp = bundle.with_name(bundle.name + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True), encoding="utf-8")
        os.replace(tmp, bundle)
        return
    fd, tmp = tempfile.mkstemp(prefix=".verify-", suffix=".gpabundle", dir=bundle.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                if info.filename != ENTRY:
                    dst.writestr(info, src.read(info))
            dst.writestr(ENTRY, json.dumps(doc, indent=1, sort_keys=True))
        os.replace(tmp, bundle)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
