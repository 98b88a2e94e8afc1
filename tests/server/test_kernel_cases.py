"""Every kernels/<case> with a recorded bundle, through the server as an editor sees it.

For each case: the advice diagnostics are exactly the advisor's (lines, ids),
the hottest line has a hover with its samples, each kernel with a
definition line in the file gets its code lens, and every quick fix the
server offers is a well-formed edit after which nvcc still compiles the file.

One server serves the module's cases (one per xdist worker): each case is a copy added to its
workspace as a folder, with its own settings and analysis worker process, and removed after, as an
editor adds and removes folders (tests/server/test_multi_root.py checks that folders do not see
each other's results). A server process per case cost 0.9 s of CPU each to start (lsprotocol).
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.uris import from_fs_path

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.config import from_mapping, load
from gpa_lsp.cuda_source import CudaSource
from gpa_lsp.server.actions import apply_edits
from gpa_lsp.server.results import PathResolver

from .conftest import nvcc_compiles
from .lsp_session import change_folders, open_doc, session, wait_for

import os

# GPA_KERNELS_DIR: another kernels/ tree (e.g. one with freshly recorded bundles) to run the same checks on
KERNELS = Path(os.environ.get("GPA_KERNELS_DIR") or Path(__file__).resolve().parents[2] / "kernels")


def _cases() -> list:
    found = []
    for gpa in sorted(KERNELS.glob("*/gpa.toml")):
        bundle = tomllib.loads(gpa.read_text()).get("profile", {}).get("bundle")
        if bundle and (gpa.parent / bundle).is_file():
            found.append(gpa.parent.name)
    return found or [pytest.param("none", marks=pytest.mark.skip(reason="no kernels/<case>/recorded bundle yet"))]


def _copy_case(tmp_path: Path, case: str) -> Path:
    shutil.copytree(KERNELS / case, tmp_path / case, ignore=shutil.ignore_patterns("build", ".gpa"))
    if (KERNELS / "common").is_dir():
        shutil.copytree(KERNELS / "common", tmp_path / "common")
    return tmp_path / case


def inside_device_bodies(text: str, edits: list[types.TextEdit]) -> bool:
    """Whether every edit lies inside the braces of a __global__ or __device__ (not __host__)
    function: nvcc's host pass never compiles those bodies, so the device compile checks all that
    such an edit can break."""
    bodies = [(f.body.start, f.body.end) for f in CudaSource(text).functions
              if f.body is not None and (f.kernel or f.device) and not any(t.text == "__host__" for t in f.specifiers)]
    return all(any(start < (e.range.start.line, e.range.start.character) and
                   (e.range.end.line, e.range.end.character) < end for start, end in bodies) for e in edits)


def test_edits_inside_kernel_bodies_are_told_apart():
    text = "__global__ void k(float* x) {\n  x[0] = 2.0;\n}\nint main() { return 0; }\n"
    at = lambda l, c0, c1: types.TextEdit(range=types.Range(start=types.Position(line=l, character=c0),  # noqa: E731
                                                           end=types.Position(line=l, character=c1)), new_text="f")
    assert inside_device_bodies(text, [at(1, 12, 12)])                 # 2.0 -> 2.0f in the kernel
    assert not inside_device_bodies(text, [at(0, 17, 22)])             # the kernel's parameters
    assert not inside_device_bodies(text, [at(3, 13, 13)])             # host code
    assert not inside_device_bodies(text, [at(1, 12, 12), at(3, 13, 13)])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(tmp_path_factory):
    """The module's server, its workspace one empty folder until a test adds its case."""
    anchor = tmp_path_factory.mktemp("kernel-cases-workspace")
    async with session(anchor, folders={anchor: None}) as client:
        yield client


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", _cases())
async def test_case_in_the_editor(case, tmp_path, editor):
    client = editor
    ws = _copy_case(tmp_path, case)
    # the bundle names the sources by the recording checkout's paths, which exist here and may be
    # edited meanwhile: map them to this copy, for the advisor here and for the server alike
    recorded_root = str((KERNELS / case).resolve())
    settings = {"paths": {"sourceMap": {recorded_root: "."}}}
    cfg = from_mapping({"paths": {"source_map": {recorded_root: "."}}}, base=load(ws))
    report = advise_bundle(cfg.bundle_path, config=cfg)
    resolve = PathResolver(ws)
    source = ws / cfg.build.sources[0]
    want = sorted((a.location.line - 1, a.optimizer) for k in report.kernels for a in k.advice
                  if a.location and resolve(a.location.file) == source.resolve())
    stats = [ls for k in report.kernels for ls in k.lines if resolve(ls.file) == source.resolve()]
    root = from_fs_path(str(ws.resolve()))
    client.set_configuration({"gpa": settings}, scope_uri=from_fs_path(str(ws)))
    change_folders(client, added=[ws])
    try:
        uri = open_doc(client, source)
        await wait_for(lambda: any(s.get("root") == root and s["state"] == "untrusted" and s.get("result")
                                   for s in client.status), 120, "the replayed analysis")
        diags = client.diagnostics.get(uri, [])
        assert sorted((d.range.start.line, d.code) for d in diags) == want
        # an estimate the memory system bounds says so, in the message and the hover
        bounded = {(a.location.line - 1, a.optimizer): a for k in report.kernels for a in k.advice
                   if a.location and a.bounded_by and resolve(a.location.file) == source.resolve()}
        if case == "lavamd_unroll":
            assert bounded, "Loop Unrolling on lavamd_unroll is bounded by the L1 (tests/analysis/test_throughput_bound.py)"
        if case == "permute_divmod":   # by the loads in flight (tests/analysis/test_parallelism.py)
            assert any(a.bounded_by == "mlp" and "loads this code keeps in flight" in a.bound_text()
                       for a in bounded.values())
        for d in diags:
            a = bounded.get((d.range.start.line, d.code))
            if a is None:
                assert "bounded by" not in d.message
                continue
            assert a.bound_text() in d.message
            hover = await client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=d.range.start))
            assert hover is not None and a.bound_text() in hover.contents.value
        if stats:
            hot = max(stats, key=lambda s: s.samples)
            hover = await client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(hot.line - 1, 0)))
            assert hover is not None and f"{hot.samples} samples" in hover.contents.value
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        want_lens = {k.line - 1 for k in report.kernels if k.line and resolve(k.file) == source.resolve()}
        assert {l.range.start.line for l in lenses} == want_lens
        for k in report.kernels:          # the busiest unit, as measured on the H100, in the summary lens
            if k.line and k.throughput and resolve(k.file) == source.resolve():
                unit, pct = max(k.throughput, key=lambda up: up[1])
                assert any(f"{pct:.0f}% of peak" in l.command.title for l in lenses
                           if l.range.start.line == k.line - 1), [l.command.title for l in lenses]
        original = source.read_text()
        compiled = []
        for d in diags:
            acts = await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=d.range,
                context=types.CodeActionContext(diagnostics=[d])))
            for a in acts:
                if not isinstance(a, types.CodeAction) or a.edit is None or not a.edit.changes \
                        or d not in (a.diagnostics or []):
                    continue                      # another advice's fix on the same line
                if uri not in a.edit.changes:
                    # fast_math: the flag goes into the project's gpa.toml, which stays valid TOML
                    assert d.code == "fast_math", (d.code, a.edit.changes)
                    toml_uri = next(iter(a.edit.changes))
                    assert toml_uri.endswith("/gpa.toml")
                    toml = tomllib.loads(apply_edits((ws / "gpa.toml").read_text(), a.edit.changes[toml_uri]))
                    assert toml["build"]["nvcc_flags"][-1] == "--use_fast_math"
                    assert toml["build"]["nvcc_flags"][:-1] == list(cfg.build.nvcc_flags)
                    compiled.append("fast_math(config)")
                    continue
                edited = apply_edits(original, a.edit.changes[uri])
                assert edited != original
                out = source.with_name(f"fixed_{d.code}.cu")
                out.write_text(edited)
                ok, err = nvcc_compiles(out, tmp_path, device_only=inside_device_bodies(original, a.edit.changes[uri]))
                assert ok, f"{case} {d.code} ({a.title}): the edited source does not compile:\n{err}"
                compiled.append(d.code)
        # on the text the advisor saw, every source fix it describes is offered
        source_fixes = [d.code if d.data["fix"]["kind"] != "fast_math" else "fast_math(config)"
                        for d in diags if d.data.get("fix")]
        assert sorted(compiled) == sorted(source_fixes)
    finally:
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=from_fs_path(str(source)))))
        change_folders(client, removed=[ws])
