"""The server's additions to LSP, typed: the Python side of editors/vscode/src/protocol.ts.

One frozen dataclass per notification, its wire method in ``METHOD`` and its
fields named as on the wire (camelCase where the TypeScript side has it), and
one function that sends them (:func:`send`); one per command result, its
command in ``COMMAND``, turned into JSON by :func:`result`. A field marked
:func:`omitted` is left out when None (``name?: T`` on the TypeScript side).
docs/protocol.md says what each carries; tests/server/test_protocol.py parses
protocol.ts and checks that the two sides agree (methods, fields, optional
fields and their types, the run states).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal, Protocol, get_args

def omitted() -> Any:
    """A field left out of the JSON when it is None (TypeScript ``name?: T``, without null)."""
    return field(default=None, metadata={"omit_if_none": True})


RunState = Literal["idle", "building", "profiling", "analysing", "measuring", "verifying", "error", "untrusted"]
RUN_STATES: tuple[str, ...] = get_args(RunState)


@dataclass(frozen=True)
class Status:
    """``gpa/status``: what a folder is doing, for the status bar."""

    METHOD: ClassVar[str] = "gpa/status"
    state: RunState
    message: str
    root: str | None = omitted()       # the workspace folder's URI
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


# ---------------------------------------------------------------- command results

@dataclass(frozen=True)
class ProfileResult:
    COMMAND: ClassVar[str] = "gpa.profile"
    started: bool
    reason: Literal["untrusted"] | None = omitted()    # why not (an untrusted folder only replays)
    message: str | None = omitted()


@dataclass(frozen=True)
class CancelResult:
    COMMAND: ClassVar[str] = "gpa.cancel"
    cancelled: bool


@dataclass(frozen=True)
class ReportResult:
    COMMAND: ClassVar[str] = "gpa.report"
    markdown: str


@dataclass(frozen=True)
class ApplyAndMeasureResult:
    COMMAND: ClassVar[str] = "gpa.applyAndMeasure"
    kernel: str
    estimated: float
    achieved: float | None             # kernel time before / after; None: not measured
    message: str
    diff: str | None = omitted()       # gpa diff's text for the kernel, when both runs have a report


@dataclass(frozen=True)
class DoctorCheck:
    name: str
    status: Literal["ok", "missing", "warning", "n/a"]
    detail: str
    fix: str
    needed_for: tuple[str, ...]


@dataclass(frozen=True)
class DoctorResult:
    COMMAND: ClassVar[str] = "gpa.doctor"
    checks: tuple[DoctorCheck, ...]
    ready: dict[str, bool]
    markdown: str
    error: str | None = omitted()      # gpa doctor could not run


@dataclass(frozen=True)
class InitResult:
    COMMAND: ClassVar[str] = "gpa.init"
    created: bool                      # the editor applied the edit that creates gpa.toml
    message: str                       # what was done, or why not, and what to do next
    path: str | None = omitted()       # the gpa.toml (created, or the one already there)


RESULTS: tuple[type, ...] = (ProfileResult, CancelResult, ReportResult, ApplyAndMeasureResult, DoctorResult,
                             InitResult)


def _json(obj: Any) -> dict[str, Any]:
    out = asdict(obj)
    for f in fields(obj):
        if f.metadata.get("omit_if_none") and out[f.name] is None:
            del out[f.name]
    return out


def result(value: Any) -> dict[str, Any]:
    """A command's result as returned to the client."""
    if not isinstance(value, RESULTS):
        raise TypeError(f"not a gpa command result: {value!r}")
    return _json(value)


# ---------------------------------------------------------------- sending notifications



class _Notifier(Protocol):
    def notify(self, method: str, params: Any) -> None: ...


def params_of(notification: Status | LineHeat) -> dict[str, Any]:
    """The notification's params as sent (plain JSON types)."""
    return _json(notification)


def send(protocol: _Notifier, notification: Status | LineHeat) -> None:
    """Send one of the notifications above (``protocol``: pygls's ``LanguageServer.protocol``)."""
    if not isinstance(notification, NOTIFICATIONS):
        raise TypeError(f"not a gpa notification: {notification!r}")
    protocol.notify(notification.METHOD, params_of(notification))
