"""The Report's JSON is written and read in one place (analysis/model.py): what the cache stores
comes back as the same Report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.model import ChangeKind, dump_report, load_report
from gpa_lsp.config import load

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@pytest.mark.parametrize("case, collector", [("hotspot_double", "cupti"), ("restrict_fir", "ncu")])
def test_a_report_survives_its_json(case, collector):
    report = advise_bundle(KERNELS / case / "recorded" / f"{collector}.gpabundle", config=load(KERNELS / case))
    assert report.kernels and report.kernels[0].advice
    back = load_report(json.loads(json.dumps(dump_report(report))))
    assert back == report
    assert all(type(a.kind) is ChangeKind for k in back.kernels for a in k.advice)
    assert "def" in json.dumps(dump_report(report))          # the JSON spelling of Hotspot.def_


def test_a_malformed_report_is_refused():
    with pytest.raises(TypeError):
        load_report({"device": {}, "collector": "cupti", "kernels": [{"name": 3}]})


def test_an_advice_kind_that_is_no_change_kind_is_refused():
    report = advise_bundle(KERNELS / "hotspot_double" / "recorded" / "cupti.gpabundle",
                           config=load(KERNELS / "hotspot_double"))
    data = dump_report(report)
    assert data["kernels"][0]["advice"][0]["kind"] in ("code", "parallel")
    data["kernels"][0]["advice"][0]["kind"] = "launch"
    with pytest.raises(TypeError):
        load_report(data)
