"""Quick fixes end to end: each advice's fix becomes a well-formed edit, and the edited file still compiles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from gpa_lsp.server.actions import apply_edits

from .conftest import nvcc_compiles
from .lsp_session import open_doc, session, wait_for

EXPECTED = {
    # optimizer -> (the line after the fix must contain, the line it replaces or precedes)
    "strength_reduction": "return a * 0.75f + b * 0.25f;",
    "loop_unrolling": "#pragma unroll 4",
    "loop_no_unroll": "#pragma unroll 2",
    "function_inlining": "__device__ __forceinline__ float smooth(float a, float b)",
    "restrict_pointer": "__global__ void relax(float *out, const float* __restrict__ in, int n, int iters)",
    # the launch uses 32-thread blocks; the fix names the new size
    "thread_increase": lambda fix: f"relax<<<(n + 31) / 32, {fix['params']['size']}>>>(out, in, n, iters);",
}


async def _actions(client, uri, d):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=d.range,
        context=types.CodeActionContext(diagnostics=[d], only=[types.CodeActionKind.QuickFix])))


@pytest.mark.parametrize("editor", ["visual-studio-code", "neovim"])
async def test_each_quick_fix_edits_and_compiles(recorded_ws, tmp_path, editor):
    app = recorded_ws / "app.cu"
    original = app.read_text()
    seen = set()
    with_fix = set()
    async with session(recorded_ws, editor=editor) as client:
        uri = open_doc(client, app)
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        for d in diags:
            acts = await _actions(client, uri, d)
            fixes = [a for a in acts if a.edit is not None and d in (a.diagnostics or [])]
            if d.data.get("fix") is not None:
                with_fix.add(d.code)
            if d.data.get("fix") is None:
                assert not fixes, f"{d.code} has no fix, yet an action was offered"
                continue
            assert len(fixes) == 1, (d.code, acts)
            edits = fixes[0].edit.changes[uri]
            edited = apply_edits(original, edits)
            assert edited != original
            expected = EXPECTED[d.code]
            expected = expected(d.data["fix"]) if callable(expected) else expected
            assert expected in edited, (d.code, edited)
            # only the intended lines changed
            changed = [l for l in edited.splitlines() if l not in original.splitlines()]
            assert len(changed) == 1, changed
            out = tmp_path / f"fixed_{d.code}.cu"
            out.write_text(edited)
            ok, err = nvcc_compiles(out, tmp_path)
            assert ok, f"{d.code}: the edited source does not compile:\n{err}"
            seen.add(d.code)
    # every fix the advisor described was offered, and the ones this program is built to show are there
    assert seen == with_fix
    assert seen >= {"strength_reduction", "function_inlining"}
    # nvcc unrolled relax's run-time loop itself (an unrolled body and its remainder): Loop
    # Unrolling says nothing there (benchmarks/unroll); its fix is tried on lavamd_unroll below
    assert "loop_unrolling" not in seen
    # relax's loop only reads `in` (its one store comes after the loop): aliasing blocks nothing,
    # so Restrict Pointer is not advised (restrict_pointer.py; benchmarks/restrict "gather")
    assert "restrict_pointer" not in seen


async def test_the_unroll_quick_fix_on_a_loop_nvcc_left_rolled(tmp_path):
    """kernels/lavamd_unroll (its H100 bundle): the gather loop under `#pragma unroll 1` gets Loop
    Unrolling's diagnostic; its quick fix asks for 4 on that line, and the program still compiles."""
    kernels = Path(__file__).resolve().parents[2] / "kernels"
    ws = tmp_path / "kernels" / "lavamd_unroll"
    shutil.copytree(kernels / "lavamd_unroll", ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    shutil.copytree(kernels / "common", tmp_path / "kernels" / "common")
    app = ws / "original.cu"
    original = app.read_text()
    async with session(ws) as client:
        uri = open_doc(client, app)
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        d = next(d for d in diags if d.code == "loop_unrolling")
        fixes = [a for a in await _actions(client, uri, d) if a.edit is not None and d in (a.diagnostics or [])]
        assert len(fixes) == 1
        edited = apply_edits(original, fixes[0].edit.changes[uri])
    changed = [l for l in edited.splitlines() if l not in original.splitlines()]
    assert [c.strip() for c in changed] == ["#pragma unroll 4"]
    out = ws / "fixed.cu"
    out.write_text(edited)
    ok, err = nvcc_compiles(out, tmp_path)
    assert ok, err


async def test_no_fix_when_the_text_is_not_what_the_fix_expects(recorded_ws):
    app = recorded_ws / "app.cu"
    async with session(recorded_ws) as client:
        uri = open_doc(client, app)
        diags = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        sr = next(d for d in diags if d.code == "strength_reduction")
        fix = sr.data["fix"]
        assert fix["kind"] == "float_literal"
        # the user already made the first literal float (not saved yet): the fix's line was edited
        line = fix["line"] - 1
        start, end = fix["params"]["columns"][0]
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, end), types.Position(line, end)), text="f")]))
        others = sorted((d.range.start.line, d.code) for d in diags if d.range.start.line != line)
        # advice on the edited line is dropped, the rest stays where it was ...
        await wait_for(lambda: sorted((d.range.start.line, d.code) for d in client.diagnostics.get(uri, []))
                       == others, 10, "the advice on the edited line to be dropped")
        # ... and the float-literal fix is no longer offered: its line is not what the fix describes
        acts = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=sr.range,
            context=types.CodeActionContext(diagnostics=[sr])))
        assert not [a for a in acts if isinstance(a, types.CodeAction) and a.edit and "double literals" in a.title]
