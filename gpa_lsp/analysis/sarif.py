"""SARIF 2.1.0 for code scanning (GitHub, the VS Code SARIF viewer, ...).

One run; one rule per optimizer (with help text: what it means, how it is
estimated); one result per advice on its diagnostic line, with the lines where
its stalls were seen as related locations, the quick fix's replacement text as
``fixes`` and the estimate (point, range, bound, verification) in ``properties``.
File URIs are relative to ``%SRCROOT%`` (``uriBaseId: "SRCROOT"``, declared in
``originalUriBaseIds``) so a code-scanning upload maps them to repository
paths; a file outside the source root keeps an absolute ``file://`` URI.
"""

from __future__ import annotations

import hashlib
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..config import AdviceConfig
from .model import Advice, ChangeKind, KernelReport, Report
from .optimizers import REGISTRY
from .quickfix import PlainEdit, describe_fix, fix_edits
from .sources import LineReader, make_reader, source_line
from .text_report import (_confidence_text, _estimate_text, _tried_text, kernel_matches, reason_at, short_name,
                          speedup_of)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "SRCROOT"

METHOD_HELP = {
    "stall_elimination": "GPA's stall elimination (Eq. 2): the kernel's time without the matched stall "
                         "samples, T / (T - M).",
    "latency_hiding": "GPA's latency hiding (Eq. 3-4): the matched latency samples (cycles in which no warp "
                      "issued) overlapped with at most the kernel's issued samples.",
    "scoped_latency_hiding": "GPA's scoped latency hiding (Eq. 5): the latency in each loop or function "
                             "hidden by the work issued in the same scope.",
    "parallel": "GPA's parallel model (Eq. 6-10): the warps per scheduler and their chance to be ready, "
                "before and after the launch change.",
}


def tool_version() -> str:
    try:
        return version("gpa-lsp")
    except PackageNotFoundError:
        return __version__


def default_srcroot(start: str | os.PathLike | None = None) -> Path:
    """The work tree of the git repository holding ``start`` (default: the current folder), else ``start``."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


class _Uris:
    def __init__(self, srcroot: Path):
        self.root = srcroot.resolve()

    def location(self, path: str) -> dict[str, Any]:
        """``{"uri": "kernels/k/original.cu", "uriBaseId": "SRCROOT"}``, or an absolute file URI outside the root."""
        p = Path(path)
        if not p.is_absolute():
            return {"uri": p.as_posix(), "uriBaseId": SRCROOT}
        try:
            rel = p.resolve().relative_to(self.root)
        except ValueError:
            return {"uri": p.as_uri()}
        return {"uri": "/".join(_quote(part) for part in rel.parts), "uriBaseId": SRCROOT}

    def base(self) -> dict[str, Any]:
        return {SRCROOT: {"uri": self.root.as_uri().rstrip("/") + "/",
                          "description": {"text": "the repository (or folder) the source paths are relative to"}}}


def _quote(part: str) -> str:
    return quote(part)


def rules() -> list[dict[str, Any]]:
    out = []
    for o in REGISTRY:
        method = METHOD_HELP.get(o.method, "")
        kind = ("a launch configuration change" if o.kind == ChangeKind.parallel else "a code change")
        text = (f"{o.suggestion}\n\n{o.title} is {kind}. Estimate: {method} Each result gives the "
                "estimated speedup of the kernel and its range, the share of the kernel's samples it "
                "explains, and, as related locations, the lines where the stalls were seen.")
        md = (f"**{o.title}** ({kind})\n\n{o.suggestion}\n\n**Estimate:** {method}\n\nEach result gives the "
              "estimated speedup of the kernel and its range (`properties.estimatedSpeedup`, `estimateLow`, "
              "`estimateHigh`), the share of the kernel's samples it explains (`properties.ratio`), and, as "
              "related locations, the lines where the stalls were seen.")
        out.append({
            "id": o.id, "name": o.title.replace(" ", "").replace("(", "").replace(")", ""),
            "shortDescription": {"text": o.title},
            "fullDescription": {"text": o.suggestion},
            "help": {"text": text, "markdown": md},
            "defaultConfiguration": {"level": "note"},
            "properties": {"tags": ["performance", "cuda", "gpu"], "estimator": o.method, "kind": o.kind},
        })
    return out


def to_sarif(report: Report, *, kernel: str | None = None, srcroot: str | os.PathLike | None = None,
             reader: LineReader | None = None, config_file: str | None = None) -> dict[str, Any]:
    """The SARIF log of ``report``. ``srcroot``: what URIs are relative to (default: the git work tree
    of the current folder); ``config_file``: the gpa.toml a build-flag fix edits (no such fix without)."""
    reader = reader or make_reader()
    uris = _Uris(Path(srcroot) if srcroot else default_srcroot())
    rule_list = rules()
    index = {r["id"]: i for i, r in enumerate(rule_list)}
    results = []
    for k in report.kernels:
        if not kernel_matches(k, kernel):
            continue
        for a in k.advice:
            results.append(_result(a, k, index, uris, reader, config_file))
    version = tool_version()
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "gpa-lsp", "version": version, "semanticVersion": version,
                            "fullName": f"gpa-lsp {version}: GPU performance advisor (GPA method)",
                            "rules": rule_list}},
        "originalUriBaseIds": uris.base(),
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {"collector": report.collector, "device": (report.device or {}).get("name", ""),
                       "totalSamples": report.total_samples},
    }
    if report.source:
        run["properties"]["bundle"] = uris.location(os.path.abspath(report.source))["uri"]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _level(speedup: float) -> str:
    """The editor's severities (config.AdviceConfig defaults): warning, note, and ``none`` for
    marginal advice (under ``config.RECOMMENDED``: shown, not recommended)."""
    advice = AdviceConfig()
    if speedup >= advice.warning:
        return "warning"
    return "note" if speedup >= advice.information else "none"


def _message(a: Advice, k: KernelReport, reader: LineReader) -> str:
    est = _estimate_text(a)
    bound = f", {a.bound_text()}" if a.bounded_by else ""
    share = (f"; explains {a.ratio * 100:.1f}% of the kernel's samples" if a.kind == ChangeKind.code else
             "; a launch configuration change")
    extra = " ".join(x for x in (_tried_text(a), _confidence_text(a)) if x)
    fix = f" Fix: {describe_fix(a.fix, reader)}." if a.fix is not None else ""
    return (f"{a.title} in {short_name(k)}: {est}{bound}{share}." + (f" {extra}" if extra else "")
            + f" {a.suggestion.strip()}{fix}")


def _result(a: Advice, k: KernelReport, index: dict[str, int], uris: _Uris, reader: LineReader,
            config_file: str | None) -> dict[str, Any]:
    props: dict[str, Any] = {"estimatedSpeedup": a.estimated_speedup, "ratio": a.ratio,
                             "matchedSamples": a.matched_samples, "kernel": k.name,
                             "kernelName": k.demangled or k.name, "kernelSamples": k.samples,
                             "kind": a.kind}
    if a.estimate_low is not None:
        props.update(estimateLow=a.estimate_low, estimateHigh=a.estimate_high)
    if a.bounded_by:
        props.update(boundedBy=a.bounded_by, boundedSharePct=a.bounded_pct)
    v = getattr(a, "verification", None)
    if v is not None:                   # the names the verification's first SARIF form used
        props.update({name: value for name, value in (
            ("verification", v.status), ("measuredSpeedup", v.speedup), ("measuredLow", v.low),
            ("measuredHigh", v.high), ("measuredOn", v.device), ("reEstimatedSpeedup", v.static_speedup),
            ("measuredPairs", v.pairs or None)) if value not in (None, "")})
    if getattr(a, "low_confidence", False):
        props["lowConfidence"] = True
        props["samplingInterval"] = list(a.sampling_interval)
    props["effectiveSpeedup"] = speedup_of(a)
    if a.marginal:
        props["marginal"] = True
    if k.duration_ns:
        props["kernelTimeNs"] = k.duration_ns
    res: dict[str, Any] = {
        "ruleId": a.optimizer,
        "level": _level(speedup_of(a)),
        "message": {"text": _message(a, k, reader)},
        "properties": props,
    }
    if a.optimizer in index:
        res["ruleIndex"] = index[a.optimizer]
    loc = a.location
    if loc is not None and loc.file:
        res["locations"] = [{"physicalLocation": {"artifactLocation": uris.location(loc.file),
                                                  "region": {"startLine": max(1, loc.line)}},
                             "logicalLocations": [{"name": short_name(k), "fullyQualifiedName": k.demangled or k.name,
                                                   "decoratedName": k.name, "kind": "function"}]}]
        text = source_line(reader, loc.file, loc.line) or ""
        key = "|".join((a.optimizer, short_name(k), uris.location(loc.file)["uri"], text.strip()))
        res["partialFingerprints"] = {"gpaAdvice/v1": hashlib.sha256(key.encode()).hexdigest()[:32]}
        related = []
        seen = set()
        line_reasons = {(ls.file, ls.line): ls.by_reason for ls in k.lines}
        for h in a.hotspots:
            u = h.use
            if not u.file or (u.file, u.line) in seen:
                continue
            seen.add((u.file, u.line))
            related.append({"id": len(related),
                            "message": {"text": f"stalls seen here ({reason_at(k, h, line_reasons)}, "
                                                f"{h.ratio * 100:.1f}% of the kernel's samples)"},
                            "physicalLocation": {"artifactLocation": uris.location(u.file),
                                                 "region": {"startLine": max(1, u.line)}}})
        if related:
            res["relatedLocations"] = related
    if a.fix is not None:
        got = fix_edits(a.fix, reader, config_file=config_file)
        if got:
            res["fixes"] = [_fix(got[0], got[1], uris)]
    return res


def _fix(title: str, edits: list[PlainEdit], uris: _Uris) -> dict[str, Any]:
    by_file: dict[str, list[PlainEdit]] = {}
    for e in edits:
        by_file.setdefault(e.file, []).append(e)
    changes = []
    for file, es in by_file.items():
        changes.append({"artifactLocation": uris.location(file), "replacements": [
            {"deletedRegion": {"startLine": e.start_line, "startColumn": e.start_col + 1,
                               "endLine": e.end_line, "endColumn": e.end_col + 1},
             "insertedContent": {"text": e.text}} for e in es]})
    return {"description": {"text": title.removeprefix("GPA: ")}, "artifactChanges": changes}
