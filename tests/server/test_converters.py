"""The features' pure converters (server/features/*), on the advice of the recorded workspace
(tests/server/workspace: relax, recorded on an H100), without a server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.config import AdviceConfig
from gpa_lsp.server.features import FEATURES, code_actions, commands, diagnostics, hover, lenses, lifecycle, workspace
from gpa_lsp.server.pipeline import Outcome
from gpa_lsp.server.results import index


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """(workspace copy, Analysis, the FileView of app.cu) from the recorded bundle."""
    import shutil

    from .conftest import WORKSPACE

    root = tmp_path_factory.mktemp("conv") / "relax"
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns("build", ".gpa"))
    report = advise_bundle(str(root / "recorded" / "cupti.gpabundle"))
    analysis = index(root, Outcome(report=report))
    view = analysis.view((root / "app.cu").resolve())
    assert view is not None
    return root, analysis, view


def _advice(view, optimizer: str):
    return next((k, a) for k, a in view.advice if a.optimizer == optimizer)


def test_every_feature_registers():
    assert all(callable(getattr(m, "register", None)) for m in FEATURES)


def test_hover_of_the_hottest_line_has_its_stalls_and_its_advice(analysed):
    _, analysis, view = analysed
    hot = max(view.lines, key=lambda ln: sum(s.samples for _, s in view.lines[ln]))
    h = hover.line_hover(view, hot, analysis.report.total_samples, line0=hot + 4, note="a note")
    assert isinstance(h, types.Hover) and h.contents.kind == types.MarkupKind.Markdown
    md = h.contents.value
    assert md.startswith("### GPA") and f"line {hot}:" in md and "| stall reason | samples | share |" in md
    assert md.rstrip().endswith("_a note_")
    assert (h.range.start.line, h.range.end.line) == (hot + 4, hot + 5)   # the current line, not the profiled one
    for _, a in view.advice:
        if a.location.line == hot:
            assert f"(`{a.optimizer}`)" in md
    assert hover.line_hover(view, 1, analysis.report.total_samples, 0) is None      # `__global__ ...` header: none


def test_hover_note_says_why_figures_may_not_match():
    assert hover.hover_note(False, False) == ""
    assert hover.hover_note(True, False) == "from an earlier run"
    assert "save to refresh" in hover.hover_note(True, True)


def test_kernel_lenses_summarise_and_offer_a_profile(analysed):
    _, analysis, view = analysed
    (k,) = view.kernels
    rep, prof = lenses.kernel_lenses(k, 13, "file:///ws", stale=True)
    assert rep.range.start.line == 13 and prof.range.start.line == 13
    assert rep.command.command == "gpa.report" and rep.command.arguments == ["file:///ws"]
    assert rep.command.title.startswith(f"GPA: {k.share:.0%} of samples, {k.limiter}-bound")
    assert f"top: {k.advice[0].title}" in rep.command.title and rep.command.title.endswith("(earlier run)")
    assert prof.command.command == "gpa.profile" and prof.command.title == "Profile now"


def test_advice_diagnostic_carries_the_fix_and_the_severity(analysed):
    _, _, view = analysed
    # relax's loop: Loop No-Unroll's `#pragma unroll 2` (Loop Unrolling is silent: nvcc unrolled it)
    k, a = _advice(view, "loop_no_unroll")
    line = "    for (int k = 0; k < iters; ++k) {"
    related = [("file:///ws/app.cu", 20, "seen here")]
    d = diagnostics.advice_diagnostic(k, a, 18, line, AdviceConfig(), related)
    assert (d.range.start.line, d.range.start.character) == (18, 4)      # from the first non-blank
    assert d.source == "gpa" and d.code == "loop_no_unroll"
    assert d.code_description.href.endswith("#loop_no_unroll")
    assert d.data["kernel"] == k.name and d.data["fix"]["kind"] == "unroll" and d.data["line"] == a.location.line
    assert d.related_information[0].location.range.start.line == 20
    want = (types.DiagnosticSeverity.Warning if a.effective_speedup >= 1.10 else
            types.DiagnosticSeverity.Information if a.effective_speedup >= 1.05 else types.DiagnosticSeverity.Hint)
    assert d.severity == want
    assert diagnostics.severity_of(1.5, AdviceConfig()) == types.DiagnosticSeverity.Warning
    assert diagnostics.severity_of(1.05, AdviceConfig()) == types.DiagnosticSeverity.Information
    # marginal advice (under config.RECOMMENDED, 1.05x) is a hint, not a recommendation
    assert diagnostics.severity_of(1.04, AdviceConfig()) == types.DiagnosticSeverity.Hint
    assert diagnostics.severity_of(1.01, AdviceConfig()) == types.DiagnosticSeverity.Hint
    assert "save to refresh" in diagnostics.advice_diagnostic(k, a, 18, line, AdviceConfig(), stale=True).message


def test_the_measure_action_takes_the_diagnostic_back(analysed):
    _, _, view = analysed
    k, a = _advice(view, "loop_no_unroll")
    d = diagnostics.advice_diagnostic(k, a, 18, None, AdviceConfig())
    other = types.Diagnostic(range=d.range, message="x", source="nvcc", code="loop_no_unroll", data=d.data)
    assert code_actions.diagnostic_of([other, d], k, a) is d
    assert code_actions.diagnostic_of([other], k, a) is None
    fix = types.CodeAction(title="GPA: add #pragma unroll 2", kind=types.CodeActionKind.QuickFix)
    m = code_actions.measure_action(fix, "file:///ws/app.cu", d, {"data": d.data})
    assert m.title == "GPA: add #pragma unroll 2 and measure" and m.diagnostics == [d] and m.edit is None
    assert m.command.command == "gpa.applyAndMeasure"
    assert m.command.arguments == [{"uri": "file:///ws/app.cu", "diagnostic": {"data": d.data}, "fixIndex": 0}]


def test_report_markdown_ranks_the_advice(analysed):
    _, analysis, _ = analysed
    md = commands.report_markdown(analysis.report, "a note", [{"kernel": "relax", "optimizer": "loop_unrolling",
                                                               "estimated": 1.2, "achieved": 1.1, "message": "ok"}])
    assert md.startswith("# GPA report") and "_a note_" in md and "## relax" in md
    speedups = [float(row.split("|")[3].strip().rstrip("x")) for row in md.splitlines() if row.startswith("| 1 ")
                or row[:4] in ("| 2 ", "| 3 ")]
    assert speedups == sorted(speedups, reverse=True) and len(speedups) == 3
    assert "| relax | loop_unrolling | 1.20x | 1.10x | ok |" in md
    assert "No analysis yet" in commands.report_markdown(None)


def test_command_arguments_name_a_folder():
    assert commands.arg_uri(["file:///a"]) == "file:///a"
    assert commands.arg_uri([{"uri": "file:///b"}]) == "file:///b"
    assert commands.arg_uri([{"rootUri": "file:///c"}]) == "file:///c"
    assert commands.arg_uri([]) is None and commands.arg_uri([3]) is None


def test_what_a_save_does():
    assert workspace.save_action(Path("/w/gpa.toml"), False) == "config"
    assert workspace.save_action(Path("/w/pyproject.toml"), True) == "config"
    assert workspace.save_action(Path("/w/k.cu"), True) == "run"
    assert workspace.save_action(Path("/w/k.cu"), False) is None
    assert workspace.save_action(Path("/w/notes.txt"), True) is None


def test_initialize_takes_workspace_folders_then_root_uri(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    p = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(b)),
                               workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(a)), name="a")])
    assert lifecycle.workspace_roots(p) == [a.resolve()]
    p = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(b)))
    assert lifecycle.workspace_roots(p) == [b.resolve()]
    p = types.InitializeParams(capabilities=types.ClientCapabilities(), root_path=str(a))
    assert lifecycle.workspace_roots(p) == [a.resolve()]
