#!/usr/bin/env python3
"""Accuracy of the advice: does the advisor name the right optimization, and
how close is its estimate to the speedup the change really achieved?

Runs here (no GPU): reads ``timings.json`` (written on the GPU machine by
``record.py``) and each case's recorded bundle ``kernels/<case>/recorded/
<collector>.gpabundle``, runs :func:`gpa_lsp.analysis.advise_bundle` on it and
writes ``docs/accuracy.md``: per case the rank of the case's optimizer, its
estimate, the measured speedup (original median / improved median), the
estimate's error ``|est - achieved| / achieved``; totals (share ranked first,
share in the top three, mean error) against the targets.

    python benchmarks/accuracy/report.py [--timings T] [--out docs/accuracy.md] [--json out.json] [case ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp import config as gpa_config  # noqa: E402
from gpa_lsp.errors import GpaError  # noqa: E402

KERNELS = ROOT / "kernels"
TARGET_FIRST = 0.80
TARGET_ERROR = 0.10


@dataclass
class Row:
    case: str
    optimizer: str
    expected_top: int
    line: int
    achieved: float | None = None
    original_ms: float | None = None
    improved_ms: float | None = None
    rank: int | None = None
    estimate: float | None = None
    advice_line: int | None = None
    line_ok: bool | None = None
    ranked: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""
    low: float | None = None          # the estimate's range (Advice.estimate_low/high), when it has one
    high: float | None = None
    bounded_by: str | None = None     # the unit whose measured throughput capped the estimate

    @property
    def in_range(self) -> bool | None:
        if self.low is None or self.high is None or not self.achieved:
            return None
        return self.low <= self.achieved <= self.high

    @property
    def error(self) -> float | None:
        if self.estimate is None or not self.achieved:
            return None
        return abs(self.estimate - self.achieved) / self.achieved

    @property
    def evaluated(self) -> bool:
        return self.achieved is not None and (self.rank is not None or not self.note)


def _advise(bundle: Path, cfg):
    try:
        from gpa_lsp.analysis import advise_bundle
    except ImportError:  # the package may not re-export it (yet)
        from gpa_lsp.analysis.advisor import advise_bundle
    return advise_bundle(str(bundle), config=cfg)


def advise_estimated(bundle: Path, case: Path):
    """The advice on ``bundle`` under the case's configuration, as estimated."""
    return _advise(bundle, gpa_config.load(case))


def advise_verified(bundle: Path, case: Path):
    """The advice after the verification results stored in the bundle (``gpa verify``,
    benchmarks/verify/run.py); the estimated advice where none is stored."""
    from gpa_lsp.verify.runner import with_stored
    cfg = gpa_config.load(case)
    return with_stored(cfg, str(bundle), _advise(bundle, cfg))


def variant_rows(cases: list[tuple[Path, Path | None]], timings: dict) -> tuple[list, list]:
    """``variants.evaluate`` on each (case, bundle: None for its recorded one), both rankings; a case
    whose bundle the advisor refuses is left out with a warning. (variant rows, case advice)"""
    import variants
    rows, advised = [], []
    for case, bundle in cases:
        try:
            rs, ca = variants.evaluate(case, timings, advise_estimated, advise_verified, bundle=bundle)
        except GpaError as exc:
            print(f"warning: {case.name}: {exc.message}", file=sys.stderr)
            continue
        rows += rs
        if ca is not None:
            advised.append(ca)
    return rows, advised


def _kernel_report(report, kernel: str):
    for k in report.kernels:
        if k.name == kernel or kernel in (k.demangled or "") or kernel in k.name:
            return k
    return None


def evaluate(case: Path, timings: dict[tuple[str, str], dict], device: str | None = None) -> Row:
    """One case's row; ``device``: the timings' device, so a case recorded on another says so."""
    meta = tomllib.loads((case / "case.toml").read_text())
    lines = {meta["line"], *meta.get("alt_lines", [])}
    lines |= {v for k, v in meta.items() if k.endswith("_line") and isinstance(v, int)}
    row = Row(case.name, meta["optimizer"], int(meta.get("top", 1)), int(meta["line"]))
    improved = next((v["name"] for v in meta.get("variant", []) if v["file"] == meta["improved"]), "improved")
    o, i = timings.get((case.name, "original")), timings.get((case.name, improved))
    if o and i:
        row.original_ms, row.improved_ms = o["median_ms"], i["median_ms"]
        row.achieved = o["median_ms"] / i["median_ms"]
    else:
        row.note = "no timing"
    collector = meta.get("collector", "cupti")
    bundle = case / "recorded" / f"{collector}.gpabundle"
    if not bundle.is_file():
        row.note = (row.note + "; " if row.note else "") + f"no recorded/{bundle.name}"
        return row
    try:
        report = _advise(bundle, gpa_config.load(case))
    except GpaError as exc:
        row.note = f"advisor failed: {exc.message}"
        return row
    recorded_on = (report.device or {}).get("name")
    if device and recorded_on and recorded_on != device:
        row.note = (row.note + "; " if row.note else "") + f"recorded and timed on {recorded_on}"
    kr = _kernel_report(report, meta["kernel"])
    if kr is None:
        row.note = f"kernel {meta['kernel']} not in the bundle"
        return row
    row.ranked = [(a.optimizer, a.estimated_speedup) for a in kr.advice]
    for n, advice in enumerate(kr.advice, 1):
        if advice.optimizer == meta["optimizer"]:
            row.rank, row.estimate = n, advice.estimated_speedup
            row.low, row.high, row.bounded_by = advice.estimate_low, advice.estimate_high, advice.bounded_by
            if advice.location is not None:
                row.advice_line = advice.location.line
                row.line_ok = advice.location.line in lines
            break
    if row.rank is None:
        row.note = "optimizer not advised"
    return row


def _fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "—" if x is None else format(x, spec) + suffix


def render(rows: list[Row], env: dict) -> str:
    judged = [r for r in rows if r.achieved is not None and not r.note.startswith(("no recorded", "advisor", "kernel"))]
    first = [r for r in judged if r.rank == 1]
    top3 = [r for r in judged if r.rank is not None and r.rank <= 3]
    errors = [r.error for r in judged if r.error is not None]
    mean_err = sum(errors) / len(errors) if errors else None
    share_first = len(first) / len(judged) if judged else None
    out = ["# Advice accuracy", "",
           "Generated by `benchmarks/accuracy/report.py` from `benchmarks/accuracy/timings.json` "
           "(timed on the GPU by `record.py`) and the bundles recorded in `kernels/*/recorded/`.", "",
           f"- device: {env.get('device', 'unknown')} (driver {env.get('driver', '?')})",
           f"- CUDA: {env.get('cuda', 'unknown')}",
           f"- timed: {env.get('date', 'unknown')}, {env.get('runs', '?')} runs per variant (median)"
           + ("; achieved from the kernels' activity-record durations" if env.get("achieved") == "duration" else ""),
           *(["- timed apart from that run:"] + [f"  - {n}" for n in env.get("notes", [])] if env.get("notes") else []), "",
           "| case | optimizer | rank | estimate | achieved | error | advice line | original ms | improved ms | notes |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rank = "—" if r.rank is None else f"{r.rank}" + ("" if r.rank <= r.expected_top else f" (want ≤ {r.expected_top})")
        line = "—" if r.advice_line is None else f"{r.advice_line}" + (" ✓" if r.line_ok else f" (want {r.line})")
        others = ", ".join(f"{o} {e:.2f}x" for o, e in r.ranked[:3])
        rng = (f"range {r.low:.2f}-{r.high:.2f}x" + (" (achieved inside)" if r.in_range else " (achieved outside)")
               if r.in_range is not None else "")
        bound = ("bounded by DRAM at its loads in flight" if r.bounded_by == "mlp"
                 else f"bounded by {r.bounded_by}" if r.bounded_by else "")
        note = "; ".join(x for x in (r.note, bound, rng, f"top: {others}" if others else "") if x)
        out.append(f"| {r.case} | {r.optimizer} | {rank} | {_fmt(r.estimate, '.2f', 'x')} | {_fmt(r.achieved, '.2f', 'x')} "
                   f"| {_fmt(None if r.error is None else 100 * r.error, '.1f', '%')} | {line} "
                   f"| {_fmt(r.original_ms, '.3f')} | {_fmt(r.improved_ms, '.3f')} | {note} |")
    out += ["", "## Totals", "",
            f"- cases judged (timing and bundle present): {len(judged)} of {len(rows)}",
            f"- optimizer ranked first: {len(first)}/{len(judged)}"
            + (f" = {100 * share_first:.0f}% (target ≥ {100 * TARGET_FIRST:.0f}%: "
               f"{'met' if share_first >= TARGET_FIRST else 'not met'})" if share_first is not None else ""),
            f"- optimizer in the top three: {len(top3)}/{len(judged)}"
            + (" (all)" if judged and len(top3) == len(judged) else ""),
            f"- achieved speedup inside the estimate's range: {sum(1 for r in judged if r.in_range)}"
            f"/{sum(1 for r in judged if r.in_range is not None)} of the advice that has a range",
            "- mean estimate error: " + (f"{100 * mean_err:.1f}% over {len(errors)} cases (target ≤ {100 * TARGET_ERROR:.0f}%: "
                                          f"{'met' if mean_err <= TARGET_ERROR else 'not met'})" if mean_err is not None else "—"),
            ""]
    out += ["Why the remaining errors, case by case: docs/optimizers.md (calibration rules, \"What the changes "
            "really removed\"); estimates are capped by the memory-system bound where the bundle has unit throughput, "
            "and by the memory-parallelism roof (\"The memory-parallelism roof\") where the loads a loop keeps in "
            "flight cannot pull more from DRAM.", ""]
    missing = [r for r in rows if r not in judged]
    if missing:
        out += ["Not judged: " + ", ".join(f"{r.case} ({r.note})" for r in missing), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--timings", default=str(Path(__file__).with_name("timings.json")))
    ap.add_argument("--out", default=str(ROOT / "docs" / "accuracy.md"))
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--achieved", choices=("event", "duration"), default="event",
                    help="achieved speedups from the event pairs (default) or the kernel durations "
                         "(timings recorded with record.py --durations)")
    args = ap.parse_args(argv)
    tpath = Path(args.timings)
    env = json.loads(tpath.read_text()) if tpath.is_file() else {}
    if not env:
        print(f"warning: {tpath} not found: no achieved speedups (run record.sh on the GPU machine)", file=sys.stderr)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import variants
    timings = variants.timings_by(env, variants.ACHIEVED_FIELDS[args.achieved])
    env = {**env, "achieved": args.achieved}
    cases = sorted(p.parent for p in KERNELS.glob("*/case.toml"))
    if args.cases:
        cases = [c for c in cases if c.name in set(args.cases)]
    rows = [evaluate(c, timings, env.get("device")) for c in cases]
    text = render(rows, env)
    vrows, vcases = variant_rows([(c, None) for c in cases], timings)
    text += "\n" + "\n".join(variants.render(vrows, vcases)) + "\n"
    import vanished
    checked = [v for c in cases if (v := vanished.compare(c, tomllib.loads((c / "case.toml").read_text())))]
    text += "\n".join(vanished.render(checked)) + ("\n" if checked else "")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps([{**r.__dict__, "error": r.error} for r in rows], indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
