"""`gpa analyze` and `gpa advise` on a bundle written from the real probe profile."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from gpa_lsp.cli import main
from gpa_lsp.profile.bundle import Bundle, make_manifest, write_bundle


@pytest.fixture(scope="module")
def probe_bundle(probe, tmp_path_factory):
    program, profile = probe
    folder = tmp_path_factory.mktemp("probe-bundle")
    data = open(program.path, "rb").read()
    return write_bundle(folder / "probe.gpabundle",
                        Bundle(profile, {program.cubin_sha256: data}, make_manifest(collector="ncu")))


def test_analyze_text(probe_bundle, capsys):
    assert main(["analyze", str(probe_bundle), "--kernel", "stencil"]) == 0
    out = capsys.readouterr().out
    assert "Kernel stencil (" in out and "localarr" not in out
    assert re.search(r"\d\. Strength Reduction at probe\.cu:\d+: est\. \d\.\d\dx", out)
    assert "of the kernel's stall samples" in out
    assert "v = v + 0.5 * (in[i - 1] + in[i + 1] - 2.0 * v);" in out   # source snippet


def test_analyze_json_shape(probe_bundle, tmp_path):
    out = tmp_path / "r.json"
    assert main(["analyze", str(probe_bundle), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["device"]["sm"] == 90
    names = {k["demangled"].split("(")[0] for k in data["kernels"]}
    assert names == {"stencil", "localarr", "chase"}
    adv = next(k for k in data["kernels"] if k["demangled"].startswith("stencil"))["advice"][0]
    assert adv["optimizer"] == "strength_reduction" and adv["estimated_speedup"] >= 1.0
    assert set(adv["hotspots"][0]) >= {"def", "use", "distance", "samples", "ratio"}
    assert adv["fix"]["kind"] == "float_literal"


def test_analyze_sarif(probe_bundle, tmp_path):
    out = tmp_path / "r.sarif"
    assert main(["analyze", str(probe_bundle), "--sarif", str(out)]) == 0
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    rules = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert results and all(r["ruleId"] in rules for r in results)
    # the stencil's double literals (localarr's `% n` is an integer division: strength reduction too)
    first = next(r for r in results if r["ruleId"] == "strength_reduction" and "stencil" in r["properties"]["kernel"])
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] in (9, 10)


def test_advise_replays_the_configured_bundle_with_moved_sources(probe_bundle, tmp_path, capsys):
    proj = tmp_path / "proj"
    (proj / "recorded").mkdir(parents=True)
    shutil.copy(probe_bundle, proj / "recorded" / "ncu.gpabundle")
    from probe_data import PROBE_CU
    shutil.copy(PROBE_CU, proj / "probe.cu")
    (proj / "gpa.toml").write_text('[profile]\ncollector = "replay"\nbundle = "recorded/ncu.gpabundle"\n'
                                   f'[paths]\nsource_map = {{ "{PROBE_CU.parent}" = "." }}\n')
    assert main(["advise", str(proj), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    fix = next(k for k in data["kernels"] if k["demangled"].startswith("stencil"))["advice"][0]["fix"]
    assert fix["file"] == str((proj / "probe.cu").resolve())


def test_advise_without_bundle_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "gpa.toml").write_text("[profile]\nkernels = []\n")
    assert main(["advise", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no recorded profile bundle" in err and "hint:" in err
