"""Check the blame against the hardware: which samples the change really removed.

For each case, the advice's match claims that some samples vanish (Eq. 2's ``M``). The improved
variant, recorded with the same collector (``scripts/gpu/record_improved.sh`` ->
``kernels/<case>/recorded/improved/<collector>.gpabundle``), says what did. Both are put in the
original's time units: the improved kernel's samples by GPA category, scaled so that they sum to
``T x duration_improved / duration_original`` (launch durations from the bundles' activity
records, or ncu's). Scaling by duration, not by sample counts, keeps the comparison right when
the change alters how many schedulers are sampled (more blocks, more warps).

Per category: *claimed* = matched samples / T, *vanished* = original share - scaled improved
share. Where vanished > claimed the change removed more than the model saw (the estimate is
low); where vanished < claimed, the samples the model removed came back as other stalls or the
kept ones grew (the estimate is high), e.g. a memory latency the deleted work used to hide.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.reasons import category as reason_category


@dataclass
class Vanished:
    case: str
    collector: str
    time_ratio: float                                   # duration original / improved (the measured speedup)
    claimed: dict[str, float] = field(default_factory=dict)    # category -> share of T the match removes
    vanished: dict[str, float] = field(default_factory=dict)   # category -> share of T that did vanish
    predicted_rest: float = 0.0                         # 1 / the optimizer's estimate before any bound
    measured_rest: float = 0.0                          # duration improved / original


def _kernel(profile, name: str):
    return next((k for k in profile.kernels if name in k.demangled or name == k.name), None)


def _mean_duration(kernel) -> float | None:
    d = [l.duration_ns for l in kernel.launches if l.duration_ns]
    if d:
        return sum(d) / len(d)
    t = kernel.throughput
    return t.duration_ns if t is not None else None


def _by_category(profile, kernel) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for p in profile.pcs:
        if p.function == kernel.name:
            for r, n in p.stalls:
                out[reason_category(r)] += n
    return dict(out)


def compare(case_dir: Path, spec: dict) -> Vanished | None:
    """The case optimizer's claim on the original bundle against the improved bundle; None when
    either bundle or a launch duration is missing."""
    collector = spec.get("collector", "cupti")
    orig_path = case_dir / "recorded" / f"{collector}.gpabundle"
    imp_path = case_dir / "recorded" / "improved" / f"{collector}.gpabundle"
    if not (orig_path.is_file() and imp_path.is_file()):
        return None
    orig_bundle = read_bundle(orig_path)
    orig, imp = orig_bundle.profile, read_bundle(imp_path).profile
    k0, k1 = _kernel(orig, spec["kernel"]), _kernel(imp, spec["kernel"])
    if k0 is None or k1 is None:
        return None
    d0, d1 = _mean_duration(k0), _mean_duration(k1)
    if not d0 or not d1:
        return None
    c0, c1 = _by_category(orig, k0), _by_category(imp, k1)
    t0, t1 = sum(c0.values()), sum(c1.values())
    if not t0 or not t1:
        return None
    scale = (d1 / d0) / t1          # improved samples -> share of the original's time
    claimed, estimate = claimed_by_category(orig_bundle, spec)
    vanished = {c: c0.get(c, 0) / t0 - c1.get(c, 0) * scale for c in set(c0) | set(c1)}
    return Vanished(case_dir.name, collector, d0 / d1, claimed, vanished,
                    predicted_rest=1.0 / estimate, measured_rest=d1 / d0)


def claimed_by_category(b, spec: dict) -> tuple[dict[str, float], float]:
    """The case optimizer's matched samples in bundle ``b`` by the category of the stall (shares of
    T), and its estimate before the memory-system bound."""
    from gpa_lsp.analysis.advisor import build_context
    from gpa_lsp.analysis.optimizers import REGISTRY
    from gpa_lsp.analysis.sources import make_reader
    from gpa_lsp.sass import load_program

    k = _kernel(b.profile, spec["kernel"])
    ctx = build_context(load_program(b.cubins[k.cubin]), k, [p for p in b.profile.pcs if p.function == k.name],
                        b.profile.device, make_reader())
    opt = next(o for o in REGISTRY if o.id == spec["optimizer"])
    m = opt.match(ctx) if ctx is not None and ctx.total else None
    if m is None:
        return {}, 1.0
    out: dict[str, float] = defaultdict(float)
    for e in m.edges:
        out[e.reason] += e.stall / ctx.total
    return dict(out), opt.estimate(ctx, m)


def render(rows: list[Vanished], top: int = 4) -> list[str]:
    if not rows:
        return []
    out = ["", "## What the change removed (blame checked against the improved variant)", "",
           "Samples of the improved variant, recorded with the same collector and scaled to the original's "
           "time by the launch durations (`benchmarks/accuracy/vanished.py`). *rest*: improved time / original "
           "time, as the model predicts it (1 / the estimate before the memory-system bound) and as measured. Per GPA category, "
           "share of the original's samples the match claims / that vanished (largest differences first).", "",
           "| case | rest predicted | rest measured | claimed / vanished by category |", "|---|---:|---:|---|"]
    for r in rows:
        cats = sorted(set(r.claimed) | {c for c, v in r.vanished.items() if abs(v) >= 0.01},
                      key=lambda c: -abs(r.claimed.get(c, 0.0) - r.vanished.get(c, 0.0)))[:top]
        cells = ", ".join(f"{c.replace('_', ' ')} {r.claimed.get(c, 0.0):.2f} / {r.vanished.get(c, 0.0):+.2f}"
                          for c in cats)
        out.append(f"| {r.case} | {r.predicted_rest:.3f} | {r.measured_rest:.3f} | {cells} |")
    return out
