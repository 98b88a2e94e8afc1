"""The example projects' bundles recorded on an H100 by scripts/gpu/record_projects.sh, with both
collectors: the advice of each finds the project's own sources (a [build] command records them
in the manifest), has source lines (gpa added -lineinfo), and puts the hottest line where the
kernel reads memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.cli import main
from gpa_lsp.commands.analyze import no_line_info_note
from gpa_lsp.config import load

from .conftest import EXAMPLES, PROJECTS

CASES = [(name, c) for name in PROJECTS for c in ("cupti", "ncu")]


def _bundle(name: str, collector: str) -> Path:
    b = EXAMPLES / name / "recorded" / f"{collector}.gpabundle"
    if not b.is_file():
        pytest.skip(f"examples/{name}/recorded/{collector}.gpabundle is not recorded yet: run "
                    "scripts/gpu/record_projects.sh on a GPU machine")
    return b


@pytest.mark.parametrize("name,collector", CASES)
def test_recorded_advice_has_the_projects_lines(name, collector):
    bundle = _bundle(name, collector)
    folder = EXAMPLES / name
    _, kernel, source = PROJECTS[name]
    report = advise_bundle(bundle, config=load(folder))
    assert report.collector == collector and no_line_info_note(report) is None
    (k,) = [k for k in report.kernels if kernel in k.name]
    assert k.samples > 0 and k.launches > 0
    assert k.file == str((folder / source).resolve())
    assert k.lines and {l.file for l in k.lines} <= {str(p.resolve()) for p in (folder / "src").glob("*")}
    hottest = max((l for l in k.lines if l.file == k.file), key=lambda l: l.samples)
    text = (folder / source).read_text().splitlines()[hottest.line - 1]
    assert "x[" in text or "y[" in text or "matrix[" in text, (hottest.line, text)
    for a in k.advice:
        assert a.location is None or Path(a.location.file).resolve().is_relative_to(folder.resolve())


@pytest.mark.parametrize("name", list(PROJECTS))
def test_gpa_advise_the_example(name, capsys):
    _bundle(name, "cupti")
    assert main(["advise", str(EXAMPLES / name)]) == 0
    out = capsys.readouterr()
    assert PROJECTS[name][1] in out.out and "no line information" not in out.err
