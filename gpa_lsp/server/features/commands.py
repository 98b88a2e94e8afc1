"""The server's commands (workspace/executeCommand): ``gpa.profile``, ``gpa.cancel``, ``gpa.report``
(the ranked report as markdown, with the applyAndMeasure history) and ``gpa.applyAndMeasure``
(:mod:`measure`). Their names are ``COMMANDS``; docs/protocol.md says what each takes and returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...analysis.model import Report
from ...profile.throughput import describe
from ..config_merge import plain
from ..protocol import CancelResult, ProfileResult, ReportResult, result
from ..trust import ENABLE_HINT
from .measure import apply_and_measure

COMMANDS = ("gpa.profile", "gpa.report", "gpa.cancel", "gpa.applyAndMeasure", "gpa.doctor",   # gpa.doctor: doctor.py
            "gpa.init")                                                                     # gpa.init: init_config.py


def report_markdown(report: Report | None, note: str = "", history: Sequence[dict[str, Any]] = (),
                    stale: bool = False) -> str:
    if report is None:
        return "# GPA report\n\nNo analysis yet. Save a CUDA source or run *GPA: Profile now*."
    dev = report.device or {}
    out = ["# GPA report", "",
           f"{dev.get('name', 'unknown GPU')} (sm_{dev.get('sm', '?')}), collector {report.collector}, "
           f"{report.total_samples} samples" + (f", bundle `{Path(report.source).name}`" if report.source else "")]
    if note or stale:
        out += ["", f"_{note or 'from an earlier run'}_"]
    for k in sorted(report.kernels, key=lambda k: -k.share):
        where = f" ({Path(k.file).name}:{k.line})" if k.file and k.line else ""
        out += ["", f"## {k.demangled or k.name}{where}", "",
                f"{k.share:.1%} of samples, {k.samples} samples, {k.launches} launches, limiter: **{k.limiter}**"
                + (f", {k.duration_ns / 1000:.1f} us" if k.duration_ns else "")]
        if k.stall_breakdown:
            total = sum(n for _, n in k.stall_breakdown) or 1
            out.append("stalls: " + ", ".join(f"{c.replace('_', ' ')} {n / total:.0%}"
                                              for c, n in sorted(k.stall_breakdown, key=lambda cn: -cn[1])[:5]))
        if k.throughput:
            out.append("units (share of peak): " + describe(k.throughput))
        if not k.advice:
            out += ["", "No advice."]
            continue
        out += ["", "| # | optimizer | est. speedup | matched | where | suggestion |", "|---:|---|---:|---:|---|---|"]
        for i, a in enumerate(sorted(k.advice, key=lambda a: -a.estimated_speedup), 1):
            loc = f"{Path(a.location.file).name}:{a.location.line}" if a.location else ""
            sug = a.suggestion.strip().splitlines()[0].replace("|", "\\|") if a.suggestion.strip() else ""
            out.append(f"| {i} | {a.title} (`{a.optimizer}`) | {a.estimated_speedup:.2f}x | {a.ratio:.1%} | {loc} | {sug} |")
    if history:
        out += ["", "## Applied fixes: estimated vs achieved", "",
                "| kernel | optimizer | estimated | achieved | note |", "|---|---|---:|---:|---|"]
        for h in history[-20:]:
            ach = f"{h['achieved']:.2f}x" if isinstance(h.get("achieved"), (int, float)) else "-"
            out.append(f"| {h.get('kernel', '')} | {h.get('optimizer', '')} | {float(h.get('estimated', 0)):.2f}x | {ach} | "
                       f"{str(h.get('message', '')).replace('|', '/')} |")
        last = next((h for h in reversed(history) if h.get("diff")), None)
        if last is not None:      # what the last applied fix changed (gpa diff)
            out += ["", f"### What changed ({last.get('optimizer', '')})", "", "```", str(last["diff"]).rstrip(), "```"]
    return "\n".join(out) + "\n"


def arg_uri(args: Any) -> str | None:
    """The folder or file a command names: its first argument, a URI or ``{"uri"|"rootUri": ...}``."""
    args = plain(list(args)) if args else args
    if args and isinstance(args[0], str):
        return args[0]
    if args and isinstance(args[0], dict):
        return args[0].get("uri") or args[0].get("rootUri")
    return None


def register(ls) -> None:
    @ls.command("gpa.profile")
    async def cmd_profile(ls, *args: Any) -> dict[str, Any]:
        folder = ls.folder_of(arg_uri(args))
        if folder is None:
            return result(ProfileResult(False, message="no workspace folder"))
        if not folder.trusted:
            ls.status(folder, "untrusted", "profiling is off: " + ENABLE_HINT)
            ls.runs.request(folder, 0, why="command")   # replays the recorded bundle
            return result(ProfileResult(False, "untrusted", ENABLE_HINT))
        ls.runs.request(folder, 0)
        return result(ProfileResult(True))

    @ls.command("gpa.cancel")
    def cmd_cancel(ls, *args: Any) -> dict[str, Any]:
        cancelled = False
        uri = arg_uri(args)
        for folder in ([ls.folder_of(uri)] if uri else list(ls.folders.values())):
            if folder is not None and folder.runner is not None:
                cancelled = folder.runner.cancel() or cancelled
        return result(CancelResult(cancelled))

    @ls.command("gpa.report")
    def cmd_report(ls, *args: Any) -> dict[str, Any]:
        folder = ls.folder_of(arg_uri(args))
        if folder is None:
            return result(ReportResult(report_markdown(None)))
        a = folder.analysis
        return result(ReportResult(report_markdown(
            a.report if a else None, a.outcome.note if a else "", folder.cache.history(),
            stale=bool(a and a.outcome.stale))))

    @ls.command("gpa.applyAndMeasure")
    async def cmd_apply_and_measure(ls, *args: Any) -> dict[str, Any]:
        arg = plain(args[0]) if args else {}
        return result(await apply_and_measure(ls, arg))
