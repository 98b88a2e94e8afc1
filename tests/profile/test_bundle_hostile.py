"""Hostile and broken bundles (issue 16, items 2, 6, 9, 10): each is a BundleError that names the
entry and the field, read within bounded memory; `gpa analyze` prints a message, never a traceback,
and its JSON never holds Infinity."""

from __future__ import annotations

import json
import math
import struct
import tracemalloc
import zipfile
from argparse import Namespace
from pathlib import Path

import pytest

from gpa_lsp.errors import BundleError
from gpa_lsp.profile import validate
from gpa_lsp.profile.bundle import read_bundle

FIXTURES = Path(__file__).with_name("fixtures")
SMALL = Path(__file__).resolve().parents[2] / "kernels" / "fan2_threads" / "recorded" / "cupti.gpabundle"


def _entries(src: Path = SMALL) -> dict[str, bytes]:
    with zipfile.ZipFile(src) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(dst: Path, entries: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return dst


def _edit(tmp_path, entry: str, edit) -> Path:
    """A copy of SMALL whose ``entry`` JSON went through ``edit(obj) -> obj`` (written with Infinity allowed)."""
    e = _entries()
    e[entry] = json.dumps(edit(json.loads(e[entry])))
    return _write(tmp_path / "edited.gpabundle", e)


def _set(path: tuple, value):
    def edit(obj):
        node = obj
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
        return obj
    return edit


# the crash sites of item 6 and the nonsense of item 9: (entry, path, value, field named in the message)
CASES = [
    ("manifest.json", (), [1, 2], "(top level)"),
    ("manifest.json", ("sources",), "app.cu", "sources"),
    ("manifest.json", ("sources", 0, "path"), "a\0b", "sources[0].path"),
    ("profile.json", (), "profile", "(top level)"),
    ("profile.json", ("device", "sm"), "90", "device.sm"),
    ("profile.json", ("device", "schedulers_per_sm"), 0, "device.schedulers_per_sm"),
    ("profile.json", ("device", "warps_per_sm"), 10 ** 15, "device.warps_per_sm"),
    ("profile.json", ("kernels", 0, "name"), None, "kernels[0].name"),
    ("profile.json", ("kernels", 0, "cubin"), ["x"], "kernels[0].cubin"),
    ("profile.json", ("kernels", 0, "launches", 0, "duration_ns"), "12", "kernels[0].launches[0].duration_ns"),
    ("profile.json", ("kernels", 0, "launches", 0, "grid"), [1, 2], "kernels[0].launches[0].grid"),
    ("profile.json", ("kernels", 0, "launches", 0, "registers"), 1e308, "kernels[0].launches[0].registers"),
    ("profile.json", ("kernels", 0, "throughput"), [1, 2], "kernels[0].throughput"),
    ("profile.json", ("kernels", 0, "throughput", "units", "dram"), 1e9, "kernels[0].throughput.units.dram"),
    ("profile.json", ("pcs", 0, "cubin"), [], "pcs[0].cubin"),
    ("profile.json", ("pcs", 0, "stalls"), [1], "pcs[0].stalls"),
    ("profile.json", ("pcs", 0, "stalls", "wait"), -897277, "pcs[0].stalls.wait"),
    ("profile.json", ("pcs", 0, "stalls", "wait"), 10 ** 18, "pcs[0].stalls.wait"),
    ("profile.json", ("pcs", 0, "offset"), 1.5, "pcs[0].offset"),
    ("profile.json", ("pcs", 0, "executed"), True, "pcs[0].executed"),
    ("profile.json", ("total_samples",), -1, "total_samples"),
]


@pytest.mark.parametrize("entry,path,value,field", CASES, ids=[f"{c[0]}:{c[3]}" for c in CASES])
def test_malformed_field_names_entry_and_field(tmp_path, entry, path, value, field):
    edit = _set(path, value) if path else (lambda obj: value)
    with pytest.raises(BundleError) as err:
        read_bundle(_edit(tmp_path, entry, edit))
    msg = err.value.message
    assert msg.startswith("edited.gpabundle"), msg
    assert f"{entry} field {field} " in msg, msg
    assert "gpa profile" in err.value.hint


@pytest.mark.parametrize("text", ["Infinity", "-Infinity", "NaN", "1e400", "1" * 400])
def test_non_finite_json_numbers_are_refused(tmp_path, text):
    e = _entries()
    prof = e["profile.json"].decode()
    e["profile.json"] = prof.replace('"total_samples":', f'"total_samples":{text},"was":', 1)
    with pytest.raises(BundleError, match=r"entry profile\.json holds"):
        read_bundle(_write(tmp_path / "n.gpabundle", e))


def test_deeply_nested_json_is_an_error(tmp_path):
    e = _entries()
    e["manifest.json"] = "[" * 200_000 + "]" * 200_000
    with pytest.raises(BundleError, match="nests too deeply"):
        read_bundle(_write(tmp_path / "d.gpabundle", e))


def test_zip_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    """Item 2: the size declared in the zip's directory is checked before a byte is inflated."""
    monkeypatch.setattr(validate, "MAX_PROFILE_BYTES", 4 << 20)
    e = _entries()
    e["profile.json"] = b" " * (64 << 20) + e["profile.json"]          # 64 MiB of JSON whitespace, ~64 KB zipped
    bomb = _write(tmp_path / "bomb.gpabundle", e)
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(BundleError, match=r"entry profile\.json unpacks to 67,[\d,]+ bytes, more than the 4,194,304"):
            read_bundle(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_caps_for_the_whole_bundle_entries_and_pcs(tmp_path, monkeypatch):
    path = _write(tmp_path / "ok.gpabundle", _entries())
    monkeypatch.setattr(validate, "MAX_TOTAL_BYTES", 5_000)
    with pytest.raises(BundleError, match="unpacks to more than 5,000 bytes in all"):
        read_bundle(path)
    monkeypatch.undo()
    monkeypatch.setattr(validate, "MAX_ENTRIES", 2)
    with pytest.raises(BundleError, match=f"has {len(_entries())} entries"):
        read_bundle(path)
    monkeypatch.undo()
    monkeypatch.setattr(validate, "MAX_PCS", 10)
    with pytest.raises(BundleError, match=r"profile\.json field pcs has 34 items, more than the 10 allowed"):
        read_bundle(path)
    monkeypatch.undo()
    assert read_bundle(path).profile.pcs


def _patch_central_directory(data: bytes, name: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Change one field of ``name``'s central-directory record (what zipfile reads for flags and method)."""
    at = data.index(b"PK\x01\x02")
    while True:
        n_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + n_len] == name:
            break
        at = data.index(b"PK\x01\x02", at + 4)
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at + offset, value)
    return bytes(buf)


@pytest.mark.parametrize("field,offset,fmt,value,message", [
    ("encrypted", 8, "<H", 0x1, "entry profile.json is encrypted"),
    ("method", 10, "<H", 99, "entry profile.json uses compression method 99"),
])
def test_encrypted_or_unknown_compression(tmp_path, field, offset, fmt, value, message):
    raw = _write(tmp_path / "x.gpabundle", _entries()).read_bytes()
    bad = tmp_path / f"{field}.gpabundle"
    bad.write_bytes(_patch_central_directory(raw, b"profile.json", offset, fmt, value))
    with pytest.raises(BundleError) as err:
        read_bundle(bad)
    assert err.value.message.startswith(f"{bad.name}: {message}")


def test_cli_prints_a_message_not_a_traceback(tmp_path, capsys):
    from gpa_lsp.cli import main

    bad = _edit(tmp_path, "profile.json", _set(("pcs", 0, "stalls"), "many"))
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "gpa: error: edited.gpabundle is corrupt: profile.json field pcs[0].stalls is missing or wrong" in err


def test_analyze_json_never_prints_infinity(capsys):
    """Item 10: an unbounded range (inf) becomes null, and the text is strict JSON."""
    from gpa_lsp.analysis.model import Advice, KernelReport, Report
    from gpa_lsp.commands.analyze import emit

    adv = Advice(optimizer="x", title="X", kind="code", estimated_speedup=1.5, ratio=0.1, matched_samples=1.0,
                 suggestion="s", estimate_low=1.2, estimate_high=math.inf, bounded_pct=math.nan)
    rep = Report(device={}, collector="cupti", kernels=(KernelReport("k", "k", 10, 1.0, "latency", (adv,)),))
    for fmt in ("json", "sarif"):
        emit(rep, Namespace(json="-" if fmt == "json" else None, sarif="-" if fmt == "sarif" else None, kernel=None))
        out = capsys.readouterr().out
        assert "Infinity" not in out and "NaN" not in out
        json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    emit(rep, Namespace(json="-", sarif=None, kernel=None))
    got = json.loads(capsys.readouterr().out)["kernels"][0]["advice"][0]
    assert got["estimate_high"] is None and got["estimate_low"] == 1.2
