"""Keep analysed line numbers pointing at the same code while the user edits.

An analysis is about the file as it was saved. Each open document gets a
``LineMap`` from the analysed (0-based) line to where that line is now;
incremental ``didChange`` events shift lines below an edit and mark a line
whose own text was changed as edited (``None``): advice for it is dropped
until the next analysis. A full-text change is mapped with a line diff.
A new analysis of the file resets the map.
"""

from __future__ import annotations

import difflib
from typing import Iterable


class LineMap:
    def __init__(self) -> None:
        # None until the first edit (every line where it was); then a dense list analysed line ->
        # current line (None: edited) over the span edits have reached. Files are small.
        self._cur: list[int | None] | None = None
        self._net = 0          # total lines added above the lines not yet in ``_cur``

    def _ensure(self, nlines: int) -> list[int | None]:
        if self._cur is None:
            self._cur = list(range(nlines))
        elif len(self._cur) < nlines:
            # analysed lines past the end of the known span: all edits so far were above them
            n = len(self._cur)
            self._cur.extend(range(n + self._net, max(nlines, n + 1) + self._net))
        return self._cur

    def current(self, line: int) -> int | None:
        """Where analysed ``line`` is now (None: its text was edited)."""
        if self._cur is None:
            return line
        if line < len(self._cur):
            return self._cur[line]
        return line + self._net

    def original(self, line: int) -> int | None:
        """The analysed line now shown at ``line`` (None: a new or edited line)."""
        if self._cur is None:
            return line
        for orig, cur in enumerate(self._cur):
            if cur == line:
                return orig
        orig = line - self._net
        return orig if orig >= len(self._cur) else None

    def apply_range_change(self, start: tuple[int, int], end: tuple[int, int], text: str, nlines_before: int) -> None:
        """An incremental edit replacing [start, end) (line, character) with ``text``."""
        cur = self._ensure(max(nlines_before, end[0] + 1))
        newlines = text.count("\n")
        delta = newlines - (end[0] - start[0])
        # The end line's text survives intact (only moved) when the edit stops at its
        # column 0 and what was inserted ends with a newline, or whole lines were deleted:
        # typing Enter above a line, pasting lines above it, deleting the lines above it.
        end_line_intact = end[1] == 0 and (text.endswith("\n") or (text == "" and start[1] == 0))
        for i, c in enumerate(cur):
            if c is None or c < start[0]:
                continue
            if c > end[0]:
                cur[i] = c + delta
            elif c == end[0] and end_line_intact:
                cur[i] = start[0] + newlines
            else:
                cur[i] = None
        self._net += delta

    def apply_full_change(self, old_text: str, new_text: str) -> None:
        """A whole-document replacement: map lines through a diff."""
        old = old_text.splitlines()
        new = new_text.splitlines()
        cur = self._ensure(len(old))
        remap: dict[int, int] = {}
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    remap[i1 + k] = j1 + k
        for i, c in enumerate(cur):
            cur[i] = remap.get(c) if c is not None else None


class Tracker:
    """LineMaps by URI, reset when a file gets a fresh analysis."""

    def __init__(self) -> None:
        self._maps: dict[str, LineMap] = {}
        self._texts: dict[str, str] = {}

    def reset(self, uri: str) -> None:
        self._maps.pop(uri, None)

    def map(self, uri: str) -> LineMap:
        return self._maps.setdefault(uri, LineMap())

    def current(self, uri: str, line: int) -> int | None:
        m = self._maps.get(uri)
        return line if m is None else m.current(line)

    def original(self, uri: str, line: int) -> int | None:
        m = self._maps.get(uri)
        return line if m is None else m.original(line)

    def opened(self, uri: str, text: str) -> None:
        self._texts[uri] = text

    def changed(self, uri: str, changes: Iterable[object], text_after: str) -> bool:
        """Apply LSP content changes (lsprotocol objects). True when any tracked line moved or was edited."""
        m = self.map(uri)
        before = self._texts.get(uri)
        any_change = False
        running = before
        for ch in changes:
            rng = getattr(ch, "range", None)
            if rng is None:
                if running is not None:
                    m.apply_full_change(running, ch.text)  # type: ignore[attr-defined]
                running = ch.text  # type: ignore[attr-defined]
                any_change = True
                continue
            nlines = (running.count("\n") + 1) if running is not None else rng.end.line + 1
            m.apply_range_change((rng.start.line, rng.start.character), (rng.end.line, rng.end.character),
                                 ch.text, nlines)  # type: ignore[attr-defined]
            running = None
            any_change = True
        self._texts[uri] = text_after
        return any_change
