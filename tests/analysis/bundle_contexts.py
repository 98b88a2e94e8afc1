"""The advisor's KernelContexts of a recorded bundle, as the advisor built them for its report (for
tests that check what the analysis saw: blame edges, gathers)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from gpa_lsp.analysis import advisor

ROOT = Path(__file__).resolve().parents[2]


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


def case_hottest(case: str, collector: str = "ncu") -> tuple[object, object]:
    """(the context of the case's hottest kernel, the report) from its recorded bundle in kernels/."""
    caught, report = contexts_of(ROOT / "kernels" / case / "recorded" / f"{collector}.gpabundle")
    return max(caught, key=lambda c: c.total), report


def h200_probe(probe: str) -> list[dict]:
    """The rows of ``coalescing.json``'s ``probe`` recorded on the H200."""
    d = json.loads(resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text())
    return d["devices"]["NVIDIA H200"][probe]


def measured_speedup(case: str, variant: str, field: str = "median_ms") -> float:
    """A case variant's speedup over its original as timed (benchmarks/accuracy/timings.json):
    ``median_ms`` the event pairs' medians, ``duration_ms`` the kernel durations (activity records)."""
    rows = json.loads((ROOT / "benchmarks" / "accuracy" / "timings.json").read_text())["results"]
    got = {r["variant"]: r[field] for r in rows if r["case"] == case and r.get(field)}
    return got["original"] / got[variant]
