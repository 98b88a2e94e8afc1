"""A code lens above each profiled kernel: its share, limiter and top advice.

Two lenses per kernel: the summary (opens the report) and "profile now".
Lenses push code down, so there is exactly one line of them per kernel.
``register`` wires ``textDocument/codeLens``; the rest is pure.
"""

from __future__ import annotations

from lsprotocol import types

from ...analysis.model import KernelReport
from ...config import RECOMMENDED
from ...profile.throughput import UNIT_TITLES


def busiest_unit(kernel: KernelReport) -> str:
    """``L1/shared 63% of peak``: the unit closest to its peak, when unit throughput was measured."""
    if not kernel.throughput:
        return ""
    unit, pct = max(kernel.throughput, key=lambda up: up[1])
    return f"{UNIT_TITLES.get(unit, unit)} {pct:.0f}% of peak"


def kernel_summary(kernel: KernelReport, information: float = RECOMMENDED) -> str:
    """``GPA: 100% of samples, memory-bound, DRAM 81% of peak | top: ... est. 1.31x``; when even the
    top advice is under ``information`` (the editor's threshold, ``config.RECOMMENDED`` by default),
    it is marginal and the lens says so rather than recommend it."""
    text = f"GPA: {kernel.share:.0%} of samples, {kernel.limiter}-bound"
    busiest = busiest_unit(kernel)
    if busiest:
        text += f", {busiest}"
    if kernel.advice:
        top = kernel.advice[0]      # ranked: verified figures first (gpa_lsp/verify/apply.py)
        v = top.verification
        if v is not None and v.status == "measured" and v.speedup is not None:
            text += f" | top: {top.title} measured {v.speedup:.2f}x (est. {top.estimated_speedup:.2f}x)"
        elif top.effective_speedup < information:
            text += f" | nothing over {information:.2f}x (marginal: {top.title} est. {top.estimated_speedup:.2f}x)"
        else:
            text += f" | top: {top.title} est. {top.estimated_speedup:.2f}x"
    else:
        text += " | no advice"
    return text


def kernel_lenses(kernel: KernelReport, line0: int, root_uri: str, stale: bool = False,
                  information: float = RECOMMENDED) -> list[types.CodeLens]:
    rng = types.Range(types.Position(line0, 0), types.Position(line0, 0))
    title = kernel_summary(kernel, information) + (" (earlier run)" if stale else "")
    return [
        types.CodeLens(range=rng, command=types.Command(title=title, command="gpa.report", arguments=[root_uri])),
        types.CodeLens(range=rng, command=types.Command(title="Profile now", command="gpa.profile", arguments=[root_uri])),
    ]


def register(ls) -> None:
    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        found = ls.view_of(uri)
        if found is None:
            return []
        folder, _, view = found
        out: list[types.CodeLens] = []
        for k in view.kernels:
            cur = ls.tracker.current(uri, (k.line or 1) - 1)
            if cur is not None:
                out += kernel_lenses(k, cur, folder.uri, stale=folder.analysis.outcome.stale,
                                     information=folder.config.advice.information)
        return out
