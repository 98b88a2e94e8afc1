"""The server's notifications beyond LSP, typed: the Python side of editors/vscode/src/protocol.ts.

One frozen dataclass per notification, its wire method in ``METHOD`` and its
fields named as on the wire (camelCase where the TypeScript side has it), and
one function that sends them (:func:`send`). docs/protocol.md says what each
carries; tests/server/test_protocol.py parses protocol.ts and checks that the
two sides agree (methods, fields, optional fields, the run states).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal, Protocol, get_args

RunState = Literal["idle", "building", "profiling", "analysing", "measuring", "verifying", "error", "untrusted"]
RUN_STATES: tuple[str, ...] = get_args(RunState)


@dataclass(frozen=True)
class Status:
    """``gpa/status``: what a folder is doing, for the status bar."""

    METHOD: ClassVar[str] = "gpa/status"
    state: RunState
    message: str
    root: str | None = None            # the workspace folder's URI
    result: str | None = None          # the top advice in a few words, after a run
    fromCache: bool = False            # noqa: N815 - the wire name; shown from the disk cache of an earlier run


@dataclass(frozen=True)
class LineHeatEntry:
    line: int                          # 0-based, in the document's current text
    share: float                       # 0..1 of the samples of the file's kernels
    samples: int


@dataclass(frozen=True)
class LineHeat:
    """``gpa/lineHeat``: per line of one file, its share of the samples; empty ``lines`` clears it."""

    METHOD: ClassVar[str] = "gpa/lineHeat"
    uri: str
    lines: tuple[LineHeatEntry, ...] = field(default_factory=tuple)


NOTIFICATIONS: tuple[type, ...] = (Status, LineHeat)


class _Notifier(Protocol):
    def notify(self, method: str, params: Any) -> None: ...


def params_of(notification: Status | LineHeat) -> dict[str, Any]:
    """The notification's params as sent (plain JSON types)."""
    return asdict(notification)


def send(protocol: _Notifier, notification: Status | LineHeat) -> None:
    """Send one of the notifications above (``protocol``: pygls's ``LanguageServer.protocol``)."""
    if not isinstance(notification, NOTIFICATIONS):
        raise TypeError(f"not a gpa notification: {notification!r}")
    protocol.notify(notification.METHOD, params_of(notification))
