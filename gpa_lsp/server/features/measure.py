"""``gpa.applyAndMeasure``: apply a fix, re-run, compare achieved with estimated speedup.

The edit goes through ``workspace/applyEdit`` (so the editor shows it and
can undo it); the edited files are also written to disk because the build
reads the disk. Achieved speedup = kernel time before / after (CUPTI/ncu
durations), else the ratio of sample counts at the same sampling period.
Each measurement is kept in the folder's history, which the report shows.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..actions import apply_edits
from ..protocol import ApplyAndMeasureResult
from ..worker import AnalysisWorker, run_here
from .code_actions import fix_workspace_edit


def _kernel_time(k) -> tuple[float | None, str]:
    if k is None:
        return None, ""
    if k.duration_ns:
        return float(k.duration_ns), "duration"
    return (float(k.samples) if k.samples else None), "samples"


def diff_text(worker: AnalysisWorker | None, before, after, kernel: str, max_lines: int = 6) -> str:
    """``gpa diff``'s text for one kernel, computed by the folder's analysis worker (the server
    process does not import the analysis)."""
    if worker is None:
        return run_here("diff_text", before, after, kernel, max_lines)
    return worker.call("diff_text", before, after, kernel, max_lines, limit=60.0, what="the comparison")


async def apply_and_measure(ls, arg: dict[str, Any]) -> ApplyAndMeasureResult:
    uri = arg.get("uri", "")
    diag = arg.get("diagnostic") or {}
    data = diag.get("data") or {}
    folder = ls.folder_of(uri)
    estimated = float(data.get("estimate") or 0.0)
    result = partial(ApplyAndMeasureResult, data.get("kernel", ""), estimated, None)
    if folder is None or folder.analysis is None:
        return result("no analysis for this file yet")
    kernel = folder.analysis.kernel(data.get("kernel", ""))
    if kernel is None or not data.get("fix"):
        return result("this diagnostic has no fix to apply")
    if not folder.trusted:
        return result("profiling is off in this folder (untrusted): apply the quick fix instead")
    path = Path(to_fs_path(uri) or uri).resolve()
    edit = fix_workspace_edit(ls, folder, path, data["fix"])
    if edit is None:
        return result("the fix no longer applies to the current text")
    # compute the new texts before the editor changes them
    new_texts: dict[Path, str] = {}
    for e_uri, edits in (edit.changes or {}).items():
        p = Path(to_fs_path(e_uri) or e_uri)
        new_texts[p] = apply_edits("\n".join(ls.lines_of(p)) + "\n", edits)
    applied = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label="GPA fix"))
    if not applied.applied:
        return result(f"the editor refused the edit: {applied.failure_reason or ''}".strip())
    for p, text in new_texts.items():
        p.write_text(text, encoding="utf-8")
    before, unit = _kernel_time(kernel)
    report_before = folder.analysis.report
    folder.runner.request(0)
    await folder.runner.wait_idle()
    outcome = folder.analysis.outcome if folder.analysis else None
    after_k = folder.analysis.kernel(kernel.name) if folder.analysis else None
    after, unit_after = _kernel_time(after_k)
    message: str
    achieved: float | None = None
    if folder.error is not None:
        message = f"the re-run failed: {folder.error.message}"
    elif outcome is not None and not outcome.measured:
        message = f"not measured: {outcome.note}"
    elif before and after and unit == unit_after:
        achieved = before / after
        message = f"achieved {before / after:.2f}x (by kernel {unit}) vs estimated {estimated:.2f}x"
    else:
        message = "not measured: the kernel was not seen in the new profile"
    diff: str | None = None
    report_after = folder.analysis.report if folder.analysis else None
    if report_before is not None and report_after is not None and folder.error is None:
        # what grew and what vanished, per stall reason and line (gpa diff, analysis/diff.py)
        try:
            diff = await asyncio.get_running_loop().run_in_executor(
                ls.executor, diff_text, folder.worker, report_before, report_after, kernel.name)
        except Exception as exc:  # noqa: BLE001 - the comparison is an extra; the measurement stands
            diff = f"(no comparison: {type(exc).__name__})"
    folder.cache.add_history({"kernel": kernel.demangled or kernel.name, "optimizer": data.get("optimizer", ""),
                              "estimated": estimated, "achieved": achieved, "message": message,
                              **({"diff": diff} if diff is not None else {})})
    return ApplyAndMeasureResult(data.get("kernel", ""), estimated, achieved, message, diff)
