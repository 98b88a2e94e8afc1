"""Diagnostics, hover, code lenses, line heat and the report from a recorded bundle (real H100 profile).

The expectations come from the real advisor run on the same bundle in the
test process: the server must show exactly that advice, on the blamed
lines, with severities from the configured thresholds.
"""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.config import load

from .lsp_session import open_doc, session, states, wait_for

EDITORS = ["visual-studio-code", "neovim"]


def expected_advice(root):
    cfg = load(root)
    report = advise_bundle(cfg.bundle_path, config=cfg)
    return report, [(k, a) for k in report.kernels for a in k.advice if a.location]


def _line_of(path, needle: str) -> int:
    return next(i for i, l in enumerate(path.read_text().splitlines()) if needle in l)


def _severity(speedup: float, warning=1.10, information=1.05):
    if speedup >= warning:
        return types.DiagnosticSeverity.Warning
    if speedup >= information:
        return types.DiagnosticSeverity.Information
    return types.DiagnosticSeverity.Hint


@pytest.mark.parametrize("editor", EDITORS)
async def test_advice_diagnostics_on_blamed_lines(recorded_ws, editor):
    report, advice = expected_advice(recorded_ws)
    assert advice, "the recorded profile must yield advice"
    app = recorded_ws / "app.cu"
    async with session(recorded_ws, editor=editor) as client:      # untrusted: replays the recorded bundle
        uri = open_doc(client, app)
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        got = sorted((d.range.start.line, d.code, d.severity) for d in diags)
        want = sorted((a.location.line - 1, a.optimizer, _severity(a.estimated_speedup)) for _, a in advice)
        assert got == want
        # the double-literal advice (the F2F.F64 conversions of smooth(), inlined into the loop)
        sr = next(d for d in diags if d.code == "strength_reduction")
        assert sr.source == "gpa"
        assert sr.code_description.href.endswith("optimizers.md#strength_reduction")
        assert "Strength Reduction" in sr.message and "x on relax" in sr.message
        assert sr.data["fix"]["kind"] == "float_literal"
        # related information points at lines where the blamed stalls were observed
        with_related = [d for d in diags if d.related_information]
        assert with_related
        for d in with_related:
            for r in d.related_information:
                assert r.location.uri == uri and "stalls observed here" in r.message
        # untrusted: the status says so, nothing was built
        assert "untrusted" in states(client)
        assert not (recorded_ws / "build").exists()


async def test_severity_thresholds_follow_settings(recorded_ws):
    report, advice = expected_advice(recorded_ws)
    async with session(recorded_ws, settings={"advice": {"warning": 1.5, "information": 1.1}}) as client:
        uri = open_doc(client, recorded_ws / "app.cu")
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        got = sorted((d.range.start.line, d.code, d.severity) for d in diags)
        want = sorted((a.location.line - 1, a.optimizer, _severity(a.estimated_speedup, 1.5, 1.1)) for _, a in advice)
        assert got == want
        assert {d.severity for d in diags} >= {types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Hint}


@pytest.mark.parametrize("editor", EDITORS)
async def test_hover_shows_samples_stalls_and_sass(recorded_ws, editor):
    report, advice = expected_advice(recorded_ws)
    app = recorded_ws / "app.cu"
    stats = max((ls for k in report.kernels for ls in k.lines), key=lambda ls: ls.samples)   # the hottest line
    line = stats.line - 1
    async with session(recorded_ws, editor=editor) as client:
        uri = open_doc(client, app)
        await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, 10)))
        md = hover.contents.value
        assert hover.contents.kind == types.MarkupKind.Markdown
        assert f"line {stats.line}: {stats.samples} samples" in md
        top_reason, top_n = max(stats.by_reason, key=lambda rn: rn[1])
        assert f"| {top_reason} | {top_n} |" in md                       # samples by stall reason
        off, sass, n = max(stats.instructions, key=lambda i: i[2])
        assert sass in md and f"/*{off:04x}*/" in md                      # the line's SASS, per instruction
        if stats.blamed:
            assert f"Blamed on this line:** {stats.blamed:.0f} stall samples" in md
        issued = f"issued {stats.issued / stats.samples:.1%}"
        assert issued in md
        for _, a in advice:
            if a.location.line == stats.line:
                assert a.title in md and f"`{a.optimizer}`" in md        # the advice for the line
        # a line with no samples has no hover
        blank = _line_of(app, "#include <cstdio>")
        none = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(blank, 1)))
        assert none is None


@pytest.mark.parametrize("editor", EDITORS)
async def test_code_lens_on_kernel_definition(recorded_ws, editor):
    report, _ = expected_advice(recorded_ws)
    k = report.kernels[0]
    app = recorded_ws / "app.cu"
    async with session(recorded_ws, editor=editor) as client:
        uri = open_doc(client, app)
        await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert {l.range.start.line for l in lenses} == {_line_of(app, "__global__ void relax")}
        titles = [l.command.title for l in lenses]
        top = max(k.advice, key=lambda a: a.estimated_speedup)
        assert any(f"{k.share:.0%} of samples" in t and k.limiter in t and top.title in t for t in titles), titles
        assert {l.command.command for l in lenses} == {"gpa.report", "gpa.profile"}


async def test_line_heat_and_report(recorded_ws):
    report, _ = expected_advice(recorded_ws)
    app = recorded_ws / "app.cu"
    async with session(recorded_ws) as client:
        uri = open_doc(client, app)
        await wait_for(lambda: client.line_heat.get(uri), 60, "gpa/lineHeat")
        heat = client.line_heat[uri]
        hottest = max(heat, key=lambda l: l["share"])
        stats = max((ls for k in report.kernels for ls in k.lines), key=lambda ls: ls.samples)
        assert hottest["line"] == stats.line - 1 and hottest["samples"] == stats.samples
        assert abs(hottest["share"] - stats.samples / report.kernels[0].samples) < 1e-9   # of the kernel's samples
        assert all(0 < l["share"] <= 1 for l in heat)
        res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gpa.report", arguments=[from_fs_path(str(recorded_ws))]))
        md = res["markdown"] if isinstance(res, dict) else res.markdown
        assert "## relax" in md and "Strength Reduction" in md and "| # | optimizer |" in md


async def test_restart_shows_cached_result_at_once(recorded_ws, tmp_path):
    cache = tmp_path / "cache"
    async with session(recorded_ws, cache=cache) as client:
        uri = open_doc(client, recorded_ws / "app.cu")
        first = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
    # the bundle goes away: a restarted server still shows the cached result, marked as such
    (recorded_ws / "recorded" / "cupti.gpabundle").unlink()
    async with session(recorded_ws, cache=cache) as client:
        uri = open_doc(client, recorded_ws / "app.cu")
        again = await wait_for(lambda: client.diagnostics.get(uri), 30, "cached diagnostics")
        assert [(d.range.start.line, d.code) for d in again] == [(d.range.start.line, d.code) for d in first]
        await wait_for(lambda: any(s.get("fromCache") for s in client.status), 10, "a status marked fromCache")


async def test_a_bundle_that_arrives_later_is_shown(recorded_ws):
    bundle = recorded_ws / "recorded" / "cupti.gpabundle"
    data = bundle.read_bytes()
    bundle.unlink()
    cfg_uri = from_fs_path(str(recorded_ws / "gpa.toml"))
    async with session(recorded_ws) as client:
        uri = open_doc(client, recorded_ws / "app.cu")
        diags = await wait_for(lambda: client.diagnostics.get(cfg_uri), 30, "the missing-bundle diagnostic")
        assert "does not exist" in diags[0].message
        assert diags[0].range.start.line == next(i for i, l in enumerate((recorded_ws / "gpa.toml").read_text()
                                                                         .splitlines()) if l.startswith("bundle"))
        bundle.write_bytes(data)                  # e.g. `git pull` brings the recorded bundle
        await wait_for(lambda: client.diagnostics.get(uri), 30, "advice from the new bundle")
        await wait_for(lambda: not client.diagnostics.get(cfg_uri), 10, "the missing-bundle diagnostic to clear")
