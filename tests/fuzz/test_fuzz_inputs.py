"""Fuzzers for everything a user or another machine hands gpa (issue 16): bundles, gpa.toml, editor
settings, cubins and the result cache. Each input is either read, or refused with the component's
own error (BundleError, ConfigError, CubinError, "nothing cached"); nothing else may escape, and
what is read can be analysed and shown.

In CI: a fixed seed (``derandomize``) and a bounded budget (``GPA_FUZZ_EXAMPLES``, 40 per target).
A longer, randomised run: ``scripts/fuzz.sh [examples]``.
"""

from __future__ import annotations

import copy
import json
import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpa_lsp.errors import BundleError, ConfigError, CubinError

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "kernels" / "fan2_threads" / "recorded" / "cupti.gpabundle"
EXAMPLES = int(os.environ.get("GPA_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=os.environ.get("GPA_FUZZ_RANDOM") != "1",
                suppress_health_check=list(HealthCheck))

scalars = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from([0, -1, 1, 2 ** 53, 10 ** 30, 1e308, "", "x", "\0", "a\nb", "../../etc/passwd"])
           | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


def _paths(obj, prefix=()):
    """Every place in a JSON tree (the first 3 items of each list), the root included."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw, base):
    """``base`` with 1-3 places replaced by any JSON value, or deleted."""
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(obj))))
        value = draw(json_values)
        if not path:
            obj = value
            continue
        node = obj
        try:
            for p in path[:-1]:
                node = node[p]
            if draw(st.booleans()) and isinstance(node, dict):
                node.pop(path[-1], None)
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass                                # an earlier mutation changed the shape
    return obj


def _entries() -> dict[str, bytes]:
    with zipfile.ZipFile(SMALL) as z:
        return {n: z.read(n) for n in z.namelist()}


ENTRIES = _entries()
MANIFEST, PROFILE = json.loads(ENTRIES["manifest.json"]), json.loads(ENTRIES["profile.json"])


# ---------------------------------------------------------------- bundles

def _analyse(path: Path) -> None:
    """Read, analyse and present a bundle: only BundleError (or a CubinError) may come out."""
    from gpa_lsp.analysis.advisor import advise_bundle
    from gpa_lsp.analysis.report import json_text, render_text, to_json_report, to_sarif
    try:
        report = advise_bundle(str(path))
    except (BundleError, CubinError):
        return
    render_text(report)
    json.loads(json_text(to_json_report(report)), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    json_text(to_sarif(report))


@FUZZ
@given(st.sampled_from(["manifest.json", "profile.json"]), st.data())
def test_fuzz_bundle_json(tmp_path_factory, entry, data):
    obj = data.draw(mutated(MANIFEST if entry == "manifest.json" else PROFILE))
    path = tmp_path_factory.mktemp("b") / "f.gpabundle"
    with zipfile.ZipFile(path, "w") as z:
        for name, raw in ENTRIES.items():
            z.writestr(name, json.dumps(obj) if name == entry else raw)     # NaN/Infinity written as is
    _analyse(path)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 255)), min_size=1, max_size=6),
       st.integers(0, 10 ** 9))
def test_fuzz_bundle_bytes(tmp_path_factory, flips, cut):
    from gpa_lsp.profile.bundle import read_bundle
    data = bytearray(SMALL.read_bytes())
    for at, byte in flips:
        data[at % len(data)] = byte
    if cut % 3 == 0:
        data = data[:cut % len(data)]
    path = tmp_path_factory.mktemp("z") / "f.gpabundle"
    path.write_bytes(bytes(data))
    try:
        read_bundle(path)
    except BundleError:
        pass


# ---------------------------------------------------------------- cubins

CUBIN = next(raw for name, raw in ENTRIES.items() if name.endswith(".cubin"))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 255)), min_size=1, max_size=8),
       st.sampled_from(["anywhere", "headers"]))
def test_fuzz_cubin(flips, where):
    import struct

    from gpa_lsp.profile.cubins import functions
    from gpa_lsp.sass.elf import read_cubin
    data = bytearray(CUBIN)
    shoff, = struct.unpack_from("<Q", CUBIN, 0x28)
    for at, byte in flips:
        at = (shoff + at % (len(CUBIN) - shoff)) if where == "headers" else at % len(data)
        data[at] = byte
    try:
        read_cubin(bytes(data), "fuzzed")
    except CubinError:
        pass
    functions(bytes(data))                     # the GPU-side reader: {} when unreadable, never raises


# ---------------------------------------------------------------- gpa.toml and settings

SECTIONS = ["build", "harness", "profile", "advice", "server", "paths", "tool", "trust", "x"]
KEYS = ["command", "sources", "nvcc_flags", "output", "nvcc", "cwd", "env", "timeout", "collector", "bundle",
        "kernels", "launch_count", "sampling_period", "ncu", "throughput", "warning", "information",
        "max_per_kernel", "run_on_save", "debounce_ms", "throughput_on_save", "source_map", "y"]
toml_scalars = st.one_of(
    st.integers(-2 ** 63, 2 ** 63 - 1).map(str), st.sampled_from(["inf", "-inf", "nan", "1e400", "0.5", "1e9"]),
    st.booleans().map(lambda b: "true" if b else "false"), st.text(max_size=10).map(json.dumps),
    st.lists(st.text(max_size=6).map(json.dumps), max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.dictionaries(st.sampled_from(["A", "B", "/a"]), st.text(max_size=5).map(json.dumps), max_size=2)
      .map(lambda d: "{ " + ", ".join(f'"{k}" = {v}' for k, v in d.items()) + " }"))


@st.composite
def toml_files(draw) -> bytes:
    lines = []
    for section in draw(st.lists(st.sampled_from(SECTIONS), max_size=4)):
        lines.append(f"[{section}]")
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True)):
            lines.append(f"{key} = {draw(toml_scalars)}")
    text = "\n".join(lines) + "\n"
    how = draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1", "junk"]))
    if how == "junk":
        return draw(st.binary(max_size=200))
    return text.encode(how, errors="replace")


@FUZZ
@given(toml_files(), st.sampled_from(["gpa.toml", "pyproject.toml"]))
def test_fuzz_config_file(tmp_path_factory, raw, name):
    from gpa_lsp.config import load
    from gpa_lsp.server.config_merge import effective_config
    folder = tmp_path_factory.mktemp("c")
    (folder / name).write_bytes((b"[tool.gpa]\n" if name == "pyproject.toml" else b"") + raw)
    eff = effective_config(folder)                    # never raises
    assert eff.error is None or isinstance(eff.error, ConfigError)
    try:
        load(folder)                                  # `gpa advise`: only ConfigError
    except ConfigError:
        pass


setting_keys = st.sampled_from(["profile", "profile.collector", "build.nvccFlags", "server.debounceMs", "harness",
                                "harness.timeout", "advice.maxPerKernel", "paths.sourceMap", "gpa.profile.bundle",
                                "lineHeat", "trustedWorkspaces", "server", "x.y", ""]) | st.text(max_size=8)


@FUZZ
@given(st.dictionaries(setting_keys, json_values, max_size=5) | json_values,
       st.dictionaries(setting_keys, json_values, max_size=5))
def test_fuzz_editor_settings(tmp_path_factory, init, editor):
    from gpa_lsp.server import trust
    from gpa_lsp.server.config_merge import effective_config
    folder = tmp_path_factory.mktemp("s")
    eff = effective_config(folder, init, editor)
    assert eff.settings_error is None or isinstance(eff.settings_error, ConfigError)
    trust.is_trusted(folder, init if isinstance(init, dict) else {}, editor)


# ---------------------------------------------------------------- the result cache

@pytest.fixture(scope="module")
def cached_entry():
    from gpa_lsp.analysis.advisor import advise_bundle
    from gpa_lsp.analysis.model import to_json
    return {"schema": 1, "key": "k", "root": "/", "time": 0.0, "note": "", "hashes": {},
            "report": to_json(advise_bundle(str(SMALL)))}


@FUZZ
@given(data=st.data())
def test_fuzz_cache(tmp_path_factory, cached_entry, data):
    from gpa_lsp.server.cache import ResultCache
    from gpa_lsp.server.pipeline import Outcome
    from gpa_lsp.server.features.commands import report_markdown
    from gpa_lsp.server.results import index
    root = tmp_path_factory.mktemp("r")
    cache = ResultCache(root, home=root / "cache")
    cache.dir.mkdir(parents=True)
    (cache.dir / "latest.json").write_text(json.dumps(data.draw(mutated(cached_entry))))
    (cache.dir / "history.json").write_text(json.dumps(data.draw(json_values)))
    got = cache.latest()
    history = cache.history()
    report = got[0] if got else None
    report_markdown(report, "", history)
    if report is not None:
        index(root, Outcome(report=report, from_cache=True))
