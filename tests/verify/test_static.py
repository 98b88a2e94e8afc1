"""Static what-if on real nvcc builds of kernels/ cases, against their H100 recordings.

Each test runs the verification as `gpa verify --static-only` does (scratch copies, nvcc -cubin,
the SASS compared) on a copy of the case, so the recorded bundle can take the results, and
checks that the case's own files are byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import dataclasses

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.analysis.model import Fix
from gpa_lsp.cuda_source import parse
from gpa_lsp.profile.demangle import bare_name
from gpa_lsp.config import load
from gpa_lsp.verify import store
from gpa_lsp.verify.runner import Options, verify_report

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _copy(tmp_path: Path, case: str) -> Path:
    """kernels/<case> (sources, gpa.toml, recorded/) and kernels/common, as the case folder expects."""
    shutil.copytree(KERNELS / "common", tmp_path / "common")
    dst = tmp_path / case
    shutil.copytree(KERNELS / case, dst, ignore=shutil.ignore_patterns("build", ".gpa", "improved"))
    return dst


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix != ".gpabundle"}


def _verify(folder: Path, top: int = 3):
    cfg = load(folder)
    report = advise_bundle(cfg.bundle_path, config=cfg)
    before = _hashes(folder)
    # results go to a fresh store: the bundle's own (recorded on the H100) would answer for it
    got, results = verify_report(cfg, cfg.bundle_path, report,
                                 Options(top=top, dynamic=False, store_path=str(folder.parent / "v.json")))
    assert _hashes(folder) == before, "an experiment changed the user's files"
    return cfg, report, got, results


def _advice(report, optimizer):
    return next(a for k in report.kernels for a in k.advice if a.optimizer == optimizer)


def _ids(report):
    return [a.optimizer for a in report.kernels[0].advice]


def test_restrict_without_aliasing_reloads_is_demoted(tmp_path):
    """prefetch_reorder's kernel reads through plain pointers and nothing is reloaded. The advisor
    no longer proposes restrict there (no store precedes its loads); a user (or an older model)
    that does gets the verifier's answer: only LDG -> LDG.E.CONSTANT changes, nothing vanishes."""
    folder = _copy(tmp_path, "prefetch_reorder")
    cfg = load(folder)
    report = advise_bundle(cfg.bundle_path, config=cfg)
    k = report.kernels[0]
    src = folder / "original.cu"
    fn = parse(src.read_text()).function(bare_name(k.name))
    pointers = [p.name for p in fn.parameters if p.pointer and not p.restrict]
    assert pointers
    proposed = dataclasses.replace(k.advice[0], optimizer="restrict_pointer", title="Restrict Pointer",
                                   estimated_speedup=1.09, verification=None,
                                   fix=Fix("restrict", str(src), fn.line + 1,
                                           {"function": bare_name(k.name), "parameter": pointers[0],
                                            "parameters": pointers}))
    report = dataclasses.replace(report, kernels=(dataclasses.replace(k, advice=(proposed,) + k.advice),))
    before = _hashes(folder)
    got, _ = verify_report(cfg, cfg.bundle_path, report,
                           Options(top=1, dynamic=False, store_path=str(tmp_path / "v.json")))
    assert _hashes(folder) == before, "an experiment changed the user's files"
    a = _advice(got, "restrict_pointer")
    assert a.verification is not None and a.verification.status == "static"
    assert a.verification.static_speedup == pytest.approx(1.0, abs=0.01)   # no load vanished
    assert not any(fam == "global load" for fam, _ in a.verification.diff.vanished)
    assert _ids(got).index("restrict_pointer") > 0                           # no longer first
    # the result is stored: the next verification of the same sources builds nothing
    assert any(v.status == "static" for v in store.read(tmp_path / "v.json"))


def test_restrict_fir_keeps_its_estimate(tmp_path):
    folder = _copy(tmp_path, "restrict_fir")
    _, before, after, _ = _verify(folder, top=1)
    est = _advice(before, "restrict_pointer").estimated_speedup
    v = _advice(after, "restrict_pointer").verification
    assert v.status == "static" and v.static_speedup == pytest.approx(est, rel=0.05)
    assert dict(v.diff.vanished)["global load"] >= 100       # the reloads of in and coef
    assert _ids(after)[0] == "restrict_pointer"


def test_float_literal_fix_removes_the_conversions(tmp_path):
    folder = _copy(tmp_path, "hotspot_double")
    _, before, after, _ = _verify(folder, top=1)
    v = _advice(after, "strength_reduction").verification
    vanished = dict(v.diff.vanished)
    assert vanished.get("conversion", 0) >= 20 and vanished.get("fp64", 0) >= 20
    assert 1.2 < v.static_speedup <= _advice(before, "strength_reduction").estimated_speedup
    assert _ids(after)[0] == "strength_reduction"


def test_a_fix_that_does_not_compile_is_not_offered(tmp_path):
    folder = _copy(tmp_path, "restrict_fir")
    src = folder / "original.cu"
    text = src.read_text()
    # the host keeps a pointer to the kernel with its exact type: `const float* __restrict__` on its
    # parameters looks right in the kernel and no longer compiles
    text = text.replace("int main(int argc, char** argv) {",
                        "void (*const kFir)(float*, float*, float*, int) = fir_bank;\n\nint main(int argc, char** argv) {")
    src.write_text(text)
    _, _, after, _ = _verify(folder, top=1)
    a = _advice(after, "restrict_pointer")
    assert a.verification.status == "no_build" and a.verification.no_gain
    assert a.effective_speedup == 1.0 and _ids(after)[-1] == "restrict_pointer"
