"""The advisor's KernelContexts of a recorded bundle, as the advisor built them for its report (for
tests that check what the analysis saw: blame edges, gathers)."""

from __future__ import annotations

from pathlib import Path

from gpa_lsp.analysis import advisor


def contexts_of(bundle: Path) -> tuple[list, object]:
    """(every KernelContext ``advise_bundle`` built, its report)."""
    caught = []
    real = advisor.build_context

    def keep(*a, **k):
        ctx = real(*a, **k)
        if ctx is not None:
            caught.append(ctx)
        return ctx
    advisor.build_context = keep
    try:
        report = advisor.advise_bundle(bundle)
    finally:
        advisor.build_context = real
    return caught, report
