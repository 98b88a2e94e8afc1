"""Per (case, variant) accuracy, by split: what the advisor ranks first and the false positives it avoids.

Each case's ``[[variant]]`` is one plausible change, named by the gpa optimizer whose advice it
carries out (``kernels/README.md``; ``also``: other optimizers whose advice text the same change
carries out, each judged by it as by a variant of its own). For each variant: the rank of that optimizer in the case
kernel's advice, its estimate, the speedup the change achieved on the GPU (``timings.json``), and
the verified figure when ``gpa verify`` stored one in the bundle. Figures, per split:

* top advice helps: the case's first-ranked advice has a variant and that variant achieves >= 1.05x
  (cases whose top advice no variant carries out are not judged). A case where the advisor
  recommends nothing is judged too when one of its variants achieves >= 1.05x: a miss (silence is
  not free); where none does, it is *rightly silent* (listed, not in the figure);
* false positives: advice ranked in the top 3 whose variant achieves < 1.02x, over top-3 advice
  that has a variant; advice counts as ranked when its figure reaches ``gpa_lsp.config.RECOMMENDED``
  (1.05x: the editor's information threshold; under it advice is marginal and its diagnostic a hint);
* error |estimate - achieved| / achieved over every (case, advised optimizer) pair, the optimizer's
  best variant standing for it (a partial change does not make an estimate wrong), and on the top
  advice.

Both rankings are reported: as estimated (``advise_bundle``) and after verification (the results
stored in the bundle; ``gpa_lsp.verify.runner.with_stored``).
"""

from __future__ import annotations

import statistics
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gpa_lsp.config import RECOMMENDED     # under it advice is marginal: shown as a hint, not recommended

HELPS = 1.05
NO_GAIN = 1.02
TARGETS = {"top_helps": 0.90, "false_positives": 0.05, "mean_error": 0.10, "top_error": 0.05}


@dataclass
class VariantRow:
    case: str
    split: str
    variant: str
    optimizer: str
    expect: str
    change: str
    achieved: float | None = None
    rank: int | None = None            # as estimated
    estimate: float | None = None
    vrank: int | None = None           # after verification
    effective: float | None = None     # measured, else re-estimated, else the estimate
    measured: float | None = None
    status: str = ""

    @property
    def error(self) -> float | None:
        if self.estimate is None or not self.achieved:
            return None
        return abs(self.estimate - self.achieved) / self.achieved

    @property
    def verified_error(self) -> float | None:
        if self.effective is None or not self.achieved:
            return None
        return abs(self.effective - self.achieved) / self.achieved


@dataclass
class CaseAdvice:
    case: str
    split: str
    ranked: list[str] = field(default_factory=list)      # optimizer ids as estimated
    vranked: list[str] = field(default_factory=list)     # after verification


def _kernel(report, name: str):
    for k in report.kernels:
        if k.name == name or name in (k.demangled or "") or name in k.name:
            return k
    return None


# bundles recorded on other devices than the cases' own (device_check.py, pin.py --device)
DEVICES = Path(__file__).resolve().parent / "devices"


def bundle_of(case: Path, meta: dict, device: str | None = None) -> Path:
    """The case's recorded bundle (the collector its case.toml names), or the one recorded on
    ``device`` (``devices/<device>/<case>.<collector>.gpabundle``)."""
    collector = meta.get("collector", "cupti")
    if device is None:
        return case / "recorded" / f"{collector}.gpabundle"
    return DEVICES / device / f"{case.name}.{collector}.gpabundle"


# what "achieved" is divided from: the event pair around one launch (the harness's GPA_TIMING), or
# the kernel's own duration from CUPTI activity records (record.py --durations; what the estimates
# and `gpa verify` measure). docs/optimizers.md ("Event pairs against kernel durations").
ACHIEVED_FIELDS = {"event": "median_ms", "duration": "duration_ms"}


def timings_by(doc: dict, field: str) -> dict[tuple[str, str], dict]:
    """(case, variant) -> a timing row whose ``median_ms`` is the chosen figure (``median_ms``: the
    event pair; ``duration_ms``: the kernel's activity-record duration); rows without it left out."""
    out = {}
    for r in doc.get("results", []):
        if r.get(field):
            out[(r["case"], r["variant"])] = {**r, "median_ms": r[field]}
    return out


def evaluate(case: Path, timings: dict, advise, advise_verified,
             bundle: Path | None = None) -> tuple[list[VariantRow], CaseAdvice | None]:
    """Each variant's row and what the advisor ranks, from the case's recorded bundle (or ``bundle``:
    one recorded on another device, ``device_check.py``)."""
    meta = tomllib.loads((case / "case.toml").read_text())
    split = meta.get("split", "calibration")
    variants = meta.get("variant") or []
    orig = timings.get((case.name, "original"))
    rows = []
    for v in variants:
        t = timings.get((case.name, v["name"]))
        achieved = orig["median_ms"] / t["median_ms"] if orig and t and t["median_ms"] > 0 else None
        # one row per optimizer whose advice the change carries out: its own, and ``also`` (kernels/README.md)
        for opt in (v["optimizer"], *v.get("also", ())):
            rows.append(VariantRow(case.name, split, v["name"], opt, v["expect"], v["change"], achieved))
    bundle = bundle or bundle_of(case, meta)
    if not bundle.is_file() or not variants:
        return rows, None
    plain, verified = _kernel(advise(bundle, case), meta["kernel"]), _kernel(advise_verified(bundle, case), meta["kernel"])
    if plain is None:
        return rows, None
    # what the advisor recommends: advice whose figure reaches the editor's information threshold
    # (below it a diagnostic is a hint: "tried: no gain", "the compiler already produces this code")
    adv = CaseAdvice(case.name, split, [a.optimizer for a in plain.advice if a.estimated_speedup >= RECOMMENDED],
                     [a.optimizer for a in (verified or plain).advice if a.effective_speedup >= RECOMMENDED])
    by_opt = {a.optimizer: a for a in plain.advice}
    vby_opt = {a.optimizer: a for a in (verified or plain).advice}
    for r in rows:
        a = by_opt.get(r.optimizer)
        if a is not None:
            r.estimate = a.estimated_speedup
            r.rank = adv.ranked.index(r.optimizer) + 1 if r.optimizer in adv.ranked else None
        va = vby_opt.get(r.optimizer)
        if va is not None:
            r.vrank = adv.vranked.index(r.optimizer) + 1 if r.optimizer in adv.vranked else None
            r.effective = va.effective_speedup
            v = va.verification
            if v is not None:
                r.status = v.status
                r.measured = v.speedup if v.status == "measured" else None
    return rows, adv


def figures(rows: list[VariantRow], cases: list[CaseAdvice], verified: bool) -> dict:
    """The split's figures for one ranking (``verified``: after verification)."""
    by_case: dict[str, list[VariantRow]] = {}
    for r in rows:
        if r.achieved is not None:
            by_case.setdefault(r.case, []).append(r)
    top_judged = top_helped = fp = fp_judged = 0
    top_errors = []
    unjudged: list[str] = []
    silent: list[str] = []           # nothing recommended where a variant helps: judged, a miss
    rightly_silent: list[str] = []   # nothing recommended and nothing helps
    for c in cases:
        ranked = c.vranked if verified else c.ranked
        mine = by_case.get(c.case, [])
        if not ranked and mine:
            if max(r.achieved for r in mine) >= HELPS:
                top_judged += 1
                silent.append(c.case)
            else:
                rightly_silent.append(c.case)
        if ranked:
            top = [r for r in mine if r.optimizer == ranked[0]]
            if not top:
                unjudged.append(f"{c.case} ({ranked[0]})")
            if top:
                best = max(top, key=lambda r: r.achieved)
                top_judged += 1
                top_helped += best.achieved >= HELPS
                e = best.verified_error if verified else best.error
                if e is not None:
                    top_errors.append(e)
        for opt in ranked[:3]:
            vs = [r for r in mine if r.optimizer == opt]
            if vs:
                fp_judged += 1
                fp += max(r.achieved for r in vs) < NO_GAIN
    # one pair per (case, advised optimizer): the best of the variants that carry it out (a partial
    # change, say a smaller block change beside the full fix, does not make the estimate wrong)
    best: dict[tuple[str, str], VariantRow] = {}
    for r in rows:
        if r.achieved is None:
            continue
        k = (r.case, r.optimizer)
        if k not in best or r.achieved > best[k].achieved:
            best[k] = r
    errors = [e for r in best.values() if (e := (r.verified_error if verified else r.error)) is not None]
    return {
        "top_judged": top_judged, "top_helps": top_helped / top_judged if top_judged else None,
        "fp_judged": fp_judged, "false_positives": fp / fp_judged if fp_judged else None,
        "pairs": len(errors), "mean_error": statistics.fmean(errors) if errors else None,
        "median_error": statistics.median(errors) if errors else None,
        "top_error": statistics.fmean(top_errors) if top_errors else None,
        # cases whose top advice no variant carries: not in the figures above (no timing judges it)
        "top_unjudged": unjudged,
        "silent": silent, "rightly_silent": rightly_silent,
    }


def silence_lines(f: dict, verified: bool) -> list[str]:
    """The cases the figures leave out or count as silent, as sentences for the reports."""
    how = "verified" if verified else "estimated"
    out = []
    if f["top_unjudged"]:
        out += ["", f"Top advice no variant carries ({how}; not judged above: no timing says whether it helps): "
                f"{len(f['top_unjudged'])} case(s): {', '.join(f['top_unjudged'])}."]
    if f["silent"]:
        out += ["", f"Nothing recommended (every advice under {RECOMMENDED:.2f}x) where a variant helps ({how}; "
                f"judged above as misses): {', '.join(f['silent'])}."]
    if f["rightly_silent"]:
        out += ["", f"Nothing recommended, and no variant helps ({how}; rightly silent, not in the figures): "
                f"{', '.join(f['rightly_silent'])}."]
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _x(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def render(rows: list[VariantRow], cases: list[CaseAdvice]) -> list[str]:
    out = ["## Both splits: every variant, and what the advisor ranks first", "",
           "Validation cases were written before the model changes checked on them and never set a constant or "
           "justify a rule (kernels/README.md); their figures are the ones quoted. *verified*: the ranking "
           "after `gpa verify` (fixes compiled and compared, timed on the H100 where stored in the bundle).", ""]
    for split in ("validation", "calibration"):
        srows = [r for r in rows if r.split == split]
        scases = [c for c in cases if c.split == split]
        if not srows:
            continue
        out += [f"### {split.capitalize()} ({len({r.case for r in srows})} cases, {len(srows)} variants)", "",
                "| ranking | top advice helps (≥ 1.05x) | false positives in top 3 (< 1.02x) | mean error, all pairs | "
                "median error | error of the top advice |", "|---|---|---|---|---|---|"]
        for verified in (False, True):
            f = figures(srows, scases, verified)
            out.append(f"| {'verified' if verified else 'estimated'} | {_pct(f['top_helps'])} of {f['top_judged']} "
                       f"| {_pct(f['false_positives'])} of {f['fp_judged']} | {_pct(f['mean_error'])} over {f['pairs']} "
                       f"| {_pct(f['median_error'])} | {_pct(f['top_error'])} |")
        for verified in (False, True):
            out += silence_lines(figures(srows, scases, verified), verified)
        t = TARGETS
        out += ["", f"Targets (validation): top advice helps ≥ {_pct(t['top_helps'])}, false positives ≤ "
                f"{_pct(t['false_positives'])}, mean error ≤ {_pct(t['mean_error'])} over every pair and ≤ "
                f"{_pct(t['top_error'])} on the top advice.", "",
                "| case | variant | optimizer | expect | achieved | rank | estimate | verified | rank after | error |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in srows:
            ver = (f"measured {_x(r.measured)}" if r.measured is not None else
                   f"{r.status} {_x(r.effective)}" if r.status else "—")
            out.append(f"| {r.case} | {r.variant} | {r.optimizer} | {r.expect} | {_x(r.achieved)} | "
                       f"{r.rank or '—'} | {_x(r.estimate)} | {ver} | {r.vrank or '—'} | {_pct(r.error)} |")
        out.append("")
    return out
