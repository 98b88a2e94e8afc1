#!/usr/bin/env python3
"""Pin what the advisor says on every validation case (tests/cases/validation_pins.json).

For each ``split = "validation"`` case with a recorded bundle: the ranked optimizers of the case's
kernel and each one's estimate and range, as estimated and after the stored verification.
``tests/cases/test_validation_pins.py`` checks the advisor against the pins, so any model change
that moves a validation figure shows in the diff of this file (re-pin with this script, and say
in the commit why the validation figures did not get worse: docs/accuracy.md).

    python3 benchmarks/accuracy/pin.py [--device h200]

``--device DEV`` pins the same cases from the bundles recorded on another device
(``benchmarks/accuracy/devices/DEV/<case>.<collector>.gpabundle``, device_check.py) into
``tests/cases/validation_pins.DEV.json``.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.analysis.advisor import advise_bundle  # noqa: E402
from gpa_lsp.config import load  # noqa: E402
from gpa_lsp.verify.runner import with_stored  # noqa: E402

PINS = ROOT / "tests" / "cases" / "validation_pins.json"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from variants import bundle_of  # noqa: E402


def pins_path(device: str | None = None) -> Path:
    """The pins of the H100 recordings (``device`` None), or of another device's."""
    return PINS if device is None else PINS.with_name(f"validation_pins.{device}.json")


def kernel_of(report, name: str):
    return next((k for k in report.kernels if k.name == name or name in (k.demangled or "") or name in k.name), None)


def pins_of(case: Path, device: str | None = None) -> dict | None:
    meta = tomllib.loads((case / "case.toml").read_text())
    bundle = bundle_of(case, meta, device)
    if meta.get("split") != "validation" or not bundle.is_file():
        return None
    cfg = load(case)
    plain = advise_bundle(str(bundle), config=cfg)
    verified = with_stored(cfg, str(bundle), plain)

    def rows(report):
        k = kernel_of(report, meta["kernel"])
        if k is None:
            return []
        return [{"optimizer": a.optimizer, "estimate": round(a.estimated_speedup, 4),
                 "low": a.estimate_low, "high": a.estimate_high,
                 "effective": round(a.effective_speedup, 4),
                 "verification": a.verification.status if a.verification else None} for a in k.advice]
    return {"bundle": str(bundle.relative_to(ROOT)), "kernel": meta["kernel"], "estimated": rows(plain),
            "verified": rows(verified)}


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="pin the bundles recorded on this device (benchmarks/accuracy/devices/DEV)")
    args = ap.parse_args(argv)
    out = {}
    for toml in sorted((ROOT / "kernels").glob("*/case.toml")):
        got = pins_of(toml.parent, args.device)
        if got is not None:
            out[toml.parent.name] = got
    path = pins_path(args.device)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"pinned {len(out)} validation case(s) in {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
