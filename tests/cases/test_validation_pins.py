"""Every validation case's ranking and estimates, pinned (benchmarks/accuracy/pin.py writes the pins).

Validation cases never set a constant or justify a rule (kernels/README.md). This test makes
every change of what the advisor says on them explicit: a model change that moves them fails
here until the pins are rewritten, in the same commit that reports the validation figures.
"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "tests" / "cases" / "validation_pins.json"
spec = importlib.util.spec_from_file_location("accuracy_pin", ROOT / "benchmarks" / "accuracy" / "pin.py")
pin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pin)
from variants import DEVICES  # noqa: E402  (on the path pin.py puts it on)

PINNED = json.loads(PINS.read_text()) if PINS.is_file() else {}
# the same cases recorded on a device the models were never tuned on (benchmarks/accuracy/device_check.py)
OTHER = {d: json.loads(pin.pins_path(d).read_text()) for d in ("h200",)}
VALIDATION = sorted(t.parent.name for t in (ROOT / "kernels").glob("*/case.toml")
                    if tomllib.loads(t.read_text()).get("split") == "validation")


def test_every_recorded_validation_case_is_pinned():
    recorded = [c for c in VALIDATION if any((ROOT / "kernels" / c / "recorded").glob("*.gpabundle"))]
    assert len(VALIDATION) >= 15
    assert sorted(PINNED) == recorded


def test_every_validation_case_recorded_on_the_other_device_is_pinned():
    for device, pinned in OTHER.items():
        recorded = [c for c in VALIDATION if any((DEVICES / device).glob(f"{c}.*.gpabundle"))]
        # a blind case is committed before it is recorded anywhere (kernels/README.md); once
        # recorded on one device it must be recorded (and pinned) on the other too
        pending = [c for c in VALIDATION if c not in recorded
                   and not any((ROOT / "kernels" / c / "recorded").glob("*.gpabundle"))]
        assert len(recorded) + len(pending) == len(VALIDATION) and sorted(pinned) == recorded, device


@pytest.mark.parametrize("case,device", [(c, None) for c in sorted(PINNED)]
                         + [(c, d) for d, p in OTHER.items() for c in sorted(p)])
def test_validation_case_matches_its_pins(case, device):
    got = pin.pins_of(ROOT / "kernels" / case, device)
    want = (PINNED if device is None else OTHER[device])[case]
    for which in ("estimated", "verified"):
        assert [r["optimizer"] for r in got[which]] == [r["optimizer"] for r in want[which]], which
        for g, w in zip(got[which], want[which]):
            assert g["estimate"] == pytest.approx(w["estimate"], rel=1e-3), (which, g["optimizer"])
            assert g["effective"] == pytest.approx(w["effective"], rel=1e-3), (which, g["optimizer"])
            assert (g["low"], g["high"]) == pytest.approx((w["low"], w["high"]), rel=1e-3) \
                if w["low"] is not None else g["low"] is None
            assert g["verification"] == w["verification"]
