"""server/protocol.py and editors/vscode/src/protocol.ts describe the same notifications.

protocol.ts is parsed (its interfaces, string-literal unions and NotificationTypes) and compared
with the Python dataclasses: the same methods, the same fields with the same optionality and
types, the same run states. A field added on one side only fails here.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest

from gpa_lsp.server import protocol

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "src" / "protocol.ts"


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_ts(text: str) -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, tuple[str, bool]]], dict[str, str]]:
    """(string-literal unions, interfaces {name: {field: (type, optional)}}, notifications {method: params type})."""
    text = _strip_comments(text)
    unions = {m.group(1): tuple(re.findall(r'"([^"]*)"', m.group(2)))
              for m in re.finditer(r"export\s+type\s+(\w+)\s*=\s*([^;]+);", text)}
    interfaces: dict[str, dict[str, tuple[str, bool]]] = {}
    for m in re.finditer(r"export\s+interface\s+(\w+)\s*\{([^}]*)\}", text):
        fields = {}
        for f in re.finditer(r"(\w+)(\??)\s*:\s*([^;]+);", m.group(2)):
            fields[f.group(1)] = (re.sub(r"\s+", "", f.group(3)), f.group(2) == "?")
        interfaces[m.group(1)] = fields
    notes = {m.group(2): m.group(1) for m in
             re.finditer(r'new\s+NotificationType<(\w+)>\(\s*"([^"]+)"\s*\)', text)}
    return unions, interfaces, notes


TS_UNIONS, TS_INTERFACES, TS_NOTIFICATIONS = parse_ts(PROTOCOL_TS.read_text())


def _agree(ts_type: str, py_type, where: str) -> None:
    """A TypeScript type (as written) and a Python annotation mean the same JSON value."""
    alts = ts_type.split("|")
    args = typing.get_args(py_type)
    if typing.get_origin(py_type) in (typing.Union, getattr(__import__("types"), "UnionType", None)) \
            and type(None) in args:
        assert "null" in alts or "undefined" in alts or len(alts) == 1, f"{where}: Python allows None, TS {ts_type}"
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, where
        py_type = rest[0]
        alts = [a for a in alts if a not in ("null", "undefined")]
    else:
        assert "null" not in alts, f"{where}: TS allows null, Python {py_type}"
    assert len(alts) == 1, f"{where}: {ts_type}"
    t = alts[0]
    if t in TS_UNIONS:
        assert typing.get_origin(py_type) is typing.Literal, f"{where}: TS {t} is a union of strings"
        assert set(typing.get_args(py_type)) == set(TS_UNIONS[t]), f"{where}: {t} differs"
    elif t.endswith("[]"):
        assert typing.get_origin(py_type) in (tuple, list), f"{where}: TS {t} is an array"
        _agree(t[:-2], typing.get_args(py_type)[0], where + "[]")
    elif t in TS_INTERFACES:
        assert dataclasses.is_dataclass(py_type), f"{where}: TS {t} is an interface, Python {py_type}"
        _same_fields(t, py_type)
    else:
        want = {"string": (str,), "number": (int, float), "boolean": (bool,)}[t]
        assert py_type in want, f"{where}: TS {t}, Python {py_type}"


def _same_fields(interface: str, cls) -> None:
    ts_fields = TS_INTERFACES[interface]
    py_fields = {f.name: f for f in dataclasses.fields(cls)}
    assert set(ts_fields) == set(py_fields), f"{interface} vs {cls.__name__}: fields differ"
    hints = typing.get_type_hints(cls)
    for name, (ts_type, optional) in ts_fields.items():
        f = py_fields[name]
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        # a field TS calls optional may be left out by the server: Python gives it a default; a
        # required one Python must always send, and never with a default TS does not expect
        if optional:
            assert has_default, f"{interface}.{name} is optional in TS: give it a default"
        _agree(ts_type, hints[name], f"{interface}.{name}")


def test_protocol_ts_was_parsed():
    assert "gpa/status" in TS_NOTIFICATIONS and "gpa/lineHeat" in TS_NOTIFICATIONS
    assert TS_INTERFACES["StatusParams"]["state"] == ("RunState", False)
    assert "idle" in TS_UNIONS["RunState"]


def test_every_notification_is_on_both_sides_with_the_same_fields():
    py = {cls.METHOD: cls for cls in protocol.NOTIFICATIONS}
    assert set(py) == set(TS_NOTIFICATIONS)
    for method, params in TS_NOTIFICATIONS.items():
        _same_fields(params, py[method])


def test_run_states_agree():
    assert set(protocol.RUN_STATES) == set(TS_UNIONS["RunState"])


def test_the_checker_catches_a_difference():
    """The comparison above fails on a field one side lacks, or on another type."""
    global TS_INTERFACES
    saved = TS_INTERFACES
    try:
        for change in ({"StatusParams": {**saved["StatusParams"], "extra": ("string", True)}},
                       {"LineHeatEntry": {**saved["LineHeatEntry"], "line": ("string", False)}}):
            TS_INTERFACES = {**saved, **change}
            with pytest.raises(AssertionError):
                test_every_notification_is_on_both_sides_with_the_same_fields()
    finally:
        TS_INTERFACES = saved


def test_send_puts_the_wire_fields_on_the_wire():
    sent = []

    class Recorder:
        def notify(self, method, params):
            sent.append((method, params))

    protocol.send(Recorder(), protocol.Status("idle", "ready", "file:///w", None, True))
    protocol.send(Recorder(), protocol.LineHeat("file:///w/a.cu", (protocol.LineHeatEntry(3, 0.5, 10),)))
    assert sent[0] == ("gpa/status", {"state": "idle", "message": "ready", "root": "file:///w", "result": None,
                                      "fromCache": True})
    method, params = sent[1]
    assert method == "gpa/lineHeat" and params["uri"] == "file:///w/a.cu"
    assert [dict(e) for e in params["lines"]] == [{"line": 3, "share": 0.5, "samples": 10}]
    assert set(sent[0][1]) == set(TS_INTERFACES["StatusParams"])
    with pytest.raises(TypeError):
        protocol.send(Recorder(), {"state": "idle"})
