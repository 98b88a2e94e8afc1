"""server/protocol.py and editors/vscode/src/protocol.ts describe the same notifications and
command results.

protocol.ts is parsed (its interfaces, string-literal unions and NotificationTypes) and compared
with the Python dataclasses: the same methods and commands, the same fields with the same
optionality and types, the same run states. A field added on one side only fails here.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path

import pytest

from gpa_lsp.server import protocol
from gpa_lsp.server.features.commands import COMMANDS

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


def _split(ts_type: str) -> list[str]:
    """The alternatives of a union, outside ``<...>``."""
    out, depth, cur = [], 0, ""
    for ch in ts_type:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _agree(ts_type: str, py_type, where: str, omit_if_none: bool = False) -> None:
    """A TypeScript type (as written) and a Python annotation mean the same JSON value."""
    alts = _split(ts_type)
    args = typing.get_args(py_type)
    if typing.get_origin(py_type) in (typing.Union, types.UnionType) and type(None) in args:
        if omit_if_none:      # None is left out: TS `name?: T`, never null
            assert "null" not in alts, f"{where}: None is left out, but TS allows null"
        else:
            assert "null" in alts, f"{where}: Python sends null, TS {ts_type} does not allow it"
        rest = [a for a in args if a is not type(None)]
        py_type = rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
        alts = [a for a in alts if a != "null"]
    else:
        assert "null" not in alts, f"{where}: TS allows null, Python {py_type} does not"
    if all(a.startswith('"') for a in alts):                     # an inline union of strings
        assert typing.get_origin(py_type) is typing.Literal, f"{where}: TS {ts_type} is a union of strings"
        assert set(typing.get_args(py_type)) == {a.strip('"') for a in alts}, f"{where}: {ts_type} differs"
        return
    assert len(alts) == 1, f"{where}: {ts_type}"
    t = alts[0]
    if t in TS_UNIONS:
        assert typing.get_origin(py_type) is typing.Literal, f"{where}: TS {t} is a union of strings"
        assert set(typing.get_args(py_type)) == set(TS_UNIONS[t]), f"{where}: {t} differs"
    elif t.endswith("[]"):
        assert typing.get_origin(py_type) in (tuple, list), f"{where}: TS {t} is an array"
        _agree(t[:-2], typing.get_args(py_type)[0], where + "[]")
    elif t.startswith("Record<string,"):
        assert typing.get_origin(py_type) is dict and typing.get_args(py_type)[0] is str, f"{where}: TS {t}"
        _agree(t[len("Record<string,"):-1], typing.get_args(py_type)[1], where + "{}")
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
        omit = bool(f.metadata.get("omit_if_none"))
        # a field TS calls optional may be left out by the server: Python gives it a default; one
        # Python leaves out when None must be optional in TS
        if optional:
            assert has_default, f"{interface}.{name} is optional in TS: give it a default"
        if omit:
            assert optional, f"{interface}.{name} is left out when None: TS must call it optional"
        _agree(ts_type, hints[name], f"{interface}.{name}", omit_if_none=omit)


def test_protocol_ts_was_parsed():
    assert "gpa/status" in TS_NOTIFICATIONS and "gpa/lineHeat" in TS_NOTIFICATIONS
    assert TS_INTERFACES["StatusParams"]["state"] == ("RunState", False)
    assert "idle" in TS_UNIONS["RunState"]


def test_every_notification_is_on_both_sides_with_the_same_fields():
    py = {cls.METHOD: cls for cls in protocol.NOTIFICATIONS}
    assert set(py) == set(TS_NOTIFICATIONS)
    for method, params in TS_NOTIFICATIONS.items():
        _same_fields(params, py[method])


def test_every_command_result_is_on_both_sides_with_the_same_fields():
    ts_results = {name for name in TS_INTERFACES if name.endswith("Result")}
    py = {cls.__name__: cls for cls in protocol.RESULTS}
    assert set(py) == ts_results
    for name, cls in py.items():
        _same_fields(name, cls)
    assert {cls.COMMAND for cls in protocol.RESULTS} == set(COMMANDS)


def test_run_states_agree():
    assert set(protocol.RUN_STATES) == set(TS_UNIONS["RunState"])


def test_the_checker_catches_a_difference():
    """The comparison above fails on a field one side lacks, or on another type."""
    global TS_INTERFACES
    saved = TS_INTERFACES
    try:
        for change in ({"StatusParams": {**saved["StatusParams"], "extra": ("string", True)}},
                       {"LineHeatEntry": {**saved["LineHeatEntry"], "line": ("string", False)}},
                       {"StatusParams": {**saved["StatusParams"], "root": ("string|null", True)}}):
            TS_INTERFACES = {**saved, **change}
            with pytest.raises(AssertionError):
                test_every_notification_is_on_both_sides_with_the_same_fields()
        for change in ({"ApplyAndMeasureResult": {**saved["ApplyAndMeasureResult"], "achieved": ("number", False)}},
                       {"ApplyAndMeasureResult": {k: v for k, v in saved["ApplyAndMeasureResult"].items()
                                                  if k != "diff"}},
                       {"DoctorCheck": {**saved["DoctorCheck"], "status": ('"ok"|"missing"', False)}},
                       {"DoctorResult": {**saved["DoctorResult"], "ready": ("Record<string,number>", False)}},
                       {"ProfileResult": {**saved["ProfileResult"], "reason": ('"untrusted"', False)}}):
            TS_INTERFACES = {**saved, **change}
            with pytest.raises(AssertionError):
                test_every_command_result_is_on_both_sides_with_the_same_fields()
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
