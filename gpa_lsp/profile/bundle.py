"""The portable profile bundle (``*.gpabundle``): one zip that holds a whole recording.

Layout (all members deflated)::

    manifest.json          schema, tool version, created, collector, build and harness
                           commands, source files (path + sha256), cubin index
    profile.json           Device, Kernels with launches (and unit throughput when measured), PCStats (gpa_lsp.profile.model)
    cubins/<sha256>.cubin  every cubin the profile refers to, by content hash

A bundle recorded on the GPU machine is analysed anywhere: the cubins travel
with the samples, so nothing has to be rebuilt to read PCs back. Standard
library only (zipfile, json, hashlib): this module runs on the GPU machine.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import itertools
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .. import __version__
from ..errors import BundleError
from . import validate
from .model import Device, Launch, PCStats, Profile
from .validate import SCHEMA, SCHEMA_VERSION

SUFFIX = ".gpabundle"
_MANIFEST = "manifest.json"
_PROFILE = "profile.json"
_CUBINS = "cubins/"


@dataclass(frozen=True)
class Bundle:
    profile: Profile
    cubins: dict[str, bytes] = field(default_factory=dict)   # sha256 -> cubin bytes
    manifest: dict = field(default_factory=dict)

    def cubin_for(self, kernel: str) -> bytes | None:
        """The cubin that holds ``kernel`` (mangled or demangled name)."""
        k = self.profile.kernel(kernel)
        return self.cubins.get(k.cubin) if k else None

    @property
    def sources(self) -> list[dict]:
        return list(self.manifest.get("sources", []))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- profile <-> JSON

def profile_to_json(p: Profile) -> dict:
    def launch(l: Launch) -> dict:
        return {"grid": list(l.grid), "block": list(l.block), "dynamic_shared": l.dynamic_shared,
                "registers": l.registers, "static_shared": l.static_shared, "duration_ns": l.duration_ns}

    def pc(s: PCStats) -> dict:
        d: dict[str, Any] = {"cubin": s.cubin, "function": s.function, "offset": s.offset,
                             "stalls": dict(s.stalls), "not_issued": dict(s.not_issued)}
        for key in ("executed", "thread_executed", "sectors", "ideal_sectors", "bank_conflicts",
                    "divergent_branches"):
            v = getattr(s, key)
            if v is not None:
                d[key] = v
        return d

    return {
        "collector": p.collector,
        "device": {k: getattr(p.device, k) for k in Device.__dataclass_fields__},
        "kernels": [{"name": k.name, "demangled": k.demangled, "cubin": k.cubin, "cubin_crc": k.cubin_crc,
                     "launches": [launch(l) for l in k.launches],
                     **({"throughput": k.throughput.to_json()} if k.throughput is not None else {})}
                    for k in p.kernels],
        "pcs": [pc(s) for s in p.pcs],
        "sampling_period": p.sampling_period,
        "dropped_samples": p.dropped_samples,
        "total_samples": p.total_samples,
    }


def profile_from_json(d: Mapping[str, Any]) -> Profile:
    """profile.json -> Profile; every field checked (BundleError naming the field: see validate.py)."""
    return validate.profile(d)


# ---------------------------------------------------------------- manifest

def source_records(paths: Iterable[str | os.PathLike], root: str | os.PathLike | None = None) -> list[dict]:
    """Manifest entries for source files: path (relative to ``root`` when inside it) and sha256."""
    out = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            continue
        shown = str(path)
        if root is not None:
            try:
                shown = str(path.resolve().relative_to(Path(root).resolve()))
            except ValueError:
                shown = str(path.resolve())
        out.append({"path": shown, "abspath": str(path.resolve()), "sha256": file_sha256(path)})
    return out


def make_manifest(*, collector: str, build_command: Sequence[str] | str | None = None,
                  harness_command: Sequence[str] | str | None = None, sources: Sequence[dict] = (),
                  extra: Mapping[str, Any] | None = None) -> dict:
    m = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tool": "gpa-lsp",
        "tool_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "collector": collector,
        "build_command": list(build_command) if isinstance(build_command, (list, tuple)) else build_command,
        "harness_command": list(harness_command) if isinstance(harness_command, (list, tuple)) else harness_command,
        "sources": list(sources),
    }
    if extra:
        m.update(extra)
    return m


def changed_sources(bundle: Bundle, root: str | os.PathLike) -> list[str]:
    """Manifest sources whose file under ``root`` differs from the recorded sha256 (stale bundle)."""
    out = []
    for src in bundle.sources:
        p = Path(src["path"]) if Path(src["path"]).is_absolute() else Path(root) / src["path"]
        if not p.is_file() or file_sha256(p) != src.get("sha256"):
            out.append(src["path"])
    return out


# ---------------------------------------------------------------- zip I/O

def write_bundle(path: str | os.PathLike, bundle: Bundle) -> Path:
    """Write ``bundle`` (only the cubins its profile names are required; extra ones are kept)."""
    return StagedBundle(path, bundle.profile, bundle.cubins).finish(bundle.manifest)


_STAGED = itertools.count()


class StagedBundle:
    """A bundle written in two steps: the profile and the cubins at once (their compression is
    nearly all of the writing), the manifest and the rename into place by :meth:`finish`.

    The CUPTI collector stages the bundle while the sampled process is still ending and finishes
    it once the process's exit status is known (the manifest holds the harness's wall time);
    :meth:`discard` removes what was staged. Until :meth:`finish` nothing is at ``path``: an
    earlier bundle there stays whole. The members' order is profile, cubins, manifest."""

    def __init__(self, path: str | os.PathLike, profile: Profile, cubins: Mapping[str, bytes]) -> None:
        p = Path(path)
        missing = sorted({k.cubin for k in profile.kernels} - set(cubins))
        if missing:
            raise BundleError(f"cannot write {p.name}: no cubin for {', '.join(m[:12] for m in missing)}",
                              "pass the cubins the kernels were loaded from")
        for sha, data in cubins.items():
            if sha256(data) != sha:
                raise BundleError(f"cannot write {p.name}: cubin key {sha[:12]} is not the sha256 of its bytes")
        self.path, self.profile, self.cubins = p, profile, dict(cubins)
        p.parent.mkdir(parents=True, exist_ok=True)
        # unique per writer (two may be staged at once), created with the umask's permissions as the bundle
        self._tmp: Path | None = p.with_name(f"{p.name}.{os.getpid()}.{next(_STAGED)}.tmp")
        try:
            self._zip = zipfile.ZipFile(self._tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9)
            self._zip.writestr(_PROFILE, json.dumps(profile_to_json(profile), separators=(",", ":")))
            for sha, data in sorted(self.cubins.items()):
                self._zip.writestr(f"{_CUBINS}{sha}.cubin", data)
        except BaseException:
            self.discard()
            raise

    def finish(self, manifest: Mapping[str, Any]) -> Path:
        """Add the manifest, close and move the bundle into place; returns its path."""
        if self._tmp is None:
            raise BundleError(f"the staged {self.path.name} was discarded")
        m = dict(manifest) or make_manifest(collector=self.profile.collector)
        m.setdefault("schema", SCHEMA)
        m["schema_version"] = SCHEMA_VERSION
        m.setdefault("collector", self.profile.collector)
        m["cubins"] = {sha: {"size": len(data)} for sha, data in sorted(self.cubins.items())}
        try:
            self._zip.writestr(_MANIFEST, json.dumps(m, indent=1, sort_keys=True))
            self._zip.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.discard()
            raise
        self._tmp = None
        return self.path

    def discard(self) -> None:
        """Remove the staged file (nothing happens to ``path``); a no-op once finished or discarded."""
        if self._tmp is None:
            return
        z = getattr(self, "_zip", None)
        if z is not None:
            try:
                z.close()
            except (OSError, ValueError):
                pass
        try:
            self._tmp.unlink()
        except OSError:
            pass
        self._tmp = None


def read_bundle(path: str | os.PathLike) -> Bundle:
    """Read a bundle; any problem is a :class:`BundleError` that names the file, the entry and the field
    and says what to do. Sizes are checked before an entry is inflated (validate.py)."""
    p = Path(path)
    hint = "record it again with `gpa profile`"
    if not p.is_file():
        raise BundleError(f"profile bundle {p} does not exist", "run `gpa profile` or fix [profile] bundle in gpa.toml")
    try:
        with zipfile.ZipFile(p) as z:
            validate.check_archive(z)
            names = set(z.namelist())
            if _MANIFEST not in names:
                raise BundleError(f"is a zip but not a gpa bundle (no {_MANIFEST})")
            budget = [validate.MAX_TOTAL_BYTES]

            def load(name: str, cap: int) -> bytes:
                return validate.read(z, validate.entry(z, name, cap), budget)

            manifest = validate.manifest(validate.load_json(load(_MANIFEST, validate.MAX_MANIFEST_BYTES), _MANIFEST))
            if _PROFILE not in names:
                raise BundleError(f"has no {_PROFILE}")
            profile = validate.profile(validate.load_json(load(_PROFILE, validate.MAX_PROFILE_BYTES), _PROFILE))
            cubins: dict[str, bytes] = {}
            for name in sorted(names):
                if name.startswith(_CUBINS) and name.endswith(".cubin"):
                    data = load(name, validate.MAX_CUBIN_BYTES)
                    key = name[len(_CUBINS):-len(".cubin")]
                    if sha256(data) != key:
                        raise BundleError(f"cubin {key[:12]} does not match its sha256 (corrupt)")
                    cubins[key] = data
    except BundleError as exc:
        # validate.py says what is wrong where; the file and what to do are added here
        sep = (" " if exc.message.startswith(("is ", "has ", "unpacks ")) else
               ": " if exc.message.startswith("entry ") else " is corrupt: ")
        raise BundleError(f"{p.name}{sep}{exc.message}", exc.hint or hint) from None
    except zipfile.BadZipFile as exc:
        raise BundleError(f"{p.name} is not a gpa bundle (not a zip file, or truncated: {exc})", hint) from None
    except (zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        # RuntimeError / NotImplementedError: what zipfile raises for an entry it cannot inflate
        raise BundleError(f"{p.name} is corrupt: {exc}", hint) from None
    missing = sorted({k.cubin for k in profile.kernels} - set(cubins))
    if missing:
        raise BundleError(f"{p.name} lacks the cubin of {len(missing)} kernel(s)", hint)
    return Bundle(profile=profile, cubins=cubins, manifest=manifest)
