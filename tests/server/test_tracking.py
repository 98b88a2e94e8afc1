"""Advice follows the code while the user edits (incremental didChange), before any re-analysis."""

from __future__ import annotations

from lsprotocol import types

from gpa_lsp.server.tracking import LineMap

from .lsp_session import open_doc, session, wait_for


def _change(client, uri, version, start, end, text):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=text)]))


async def test_ranges_move_with_edits(recorded_ws):
    app = recorded_ws / "app.cu"
    async with session(recorded_ws) as client:
        uri = open_doc(client, app)
        before = await wait_for(lambda: client.diagnostics.get(uri), 60, "advice diagnostics")
        lines0 = sorted((d.range.start.line, d.code) for d in before)
        version = [1]

        def edit(start, end, text):
            version[0] += 1
            _change(client, uri, version[0], start, end, text)

        # two new lines at the top: everything moves down by 2
        edit((0, 0), (0, 0), "// added\n// added\n")
        moved = await wait_for(lambda: sorted((d.range.start.line, d.code) for d in client.diagnostics.get(uri, []))
                               if client.diagnostics.get(uri) and client.diagnostics[uri][0].range.start.line
                               != before[0].range.start.line else None, 10, "moved diagnostics")
        assert moved == [(l + 2, c) for l, c in lines0]
        # the hover follows the moved line: the same analysed line's statistics, two lines lower
        sr_line = next(l for l, c in lines0 if c == "strength_reduction")
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(sr_line + 2, 8)))
        assert hover is not None and f"line {sr_line + 1}: " in hover.contents.value
        above = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(1, 0)))
        assert above is None                                   # an inserted line has no statistics
        # code lens and line heat moved too
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert lenses[0].range.start.line == next(i for i, l in enumerate(app.read_text().splitlines())
                                                   if "__global__ void relax" in l) + 2
        # deleting those two lines puts everything back
        edit((0, 0), (2, 0), "")
        await wait_for(lambda: sorted((d.range.start.line, d.code) for d in client.diagnostics.get(uri, [])) == lines0,
                       10, "diagnostics back at their lines")
        # editing the text of an advised line drops its advice, the rest stays
        loop_line = next(l for l, c in lines0 if c == "loop_no_unroll")
        edit((loop_line, 4), (loop_line, 4), "/* edited */ ")
        after = await wait_for(lambda: client.diagnostics.get(uri, [])
                               if not any(d.range.start.line == loop_line for d in client.diagnostics.get(uri, []))
                               else None, 10, "the edited line's advice to be dropped")
        assert sorted((d.range.start.line, d.code) for d in after) == [(l, c) for l, c in lines0 if l != loop_line]


def test_line_map_shifts_and_marks_edits():
    m = LineMap()
    m.apply_range_change((3, 0), (3, 0), "x\n", 10)      # a new line above line 3
    assert [m.current(i) for i in range(5)] == [0, 1, 2, 4, 5]
    m.apply_range_change((5, 2), (5, 4), "yy", 11)       # edit inside analysed line 4 (now at 5)
    assert m.current(4) is None and m.current(5) == 6
    assert m.original(6) == 5 and m.original(3) is None  # line 3 is the inserted one
    m.apply_range_change((0, 0), (2, 0), "", 11)         # delete the first two lines
    assert m.current(0) is None and m.current(1) is None and m.current(2) == 0
    assert m.current(9) == 8 and m.current(40) == 39     # beyond the known span: net shift


def test_line_map_full_change_uses_a_diff():
    m = LineMap()
    old = "a\nb\nc\nd\n"
    m.apply_full_change(old, "new\na\nb\nC\nd\n")
    assert [m.current(i) for i in range(4)] == [1, 2, None, 4]


def test_enter_at_start_of_line_moves_it_without_marking_it_edited():
    m = LineMap()
    m.apply_range_change((4, 0), (4, 0), "\n", 10)
    assert m.current(4) == 5
    m.apply_range_change((5, 0), (6, 0), "", 11)         # delete that line 5 (old 4) entirely
    assert m.current(4) is None and m.current(5) == 5
