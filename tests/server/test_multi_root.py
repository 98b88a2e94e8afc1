"""Multi-root workspaces: each folder has its own gpa.toml, trust, runs, cache and watcher.

Two folders, each a copy of a different kernels/<case> that replays its
recorded bundle (the client does not trust them, so nothing is built or
run): each gets exactly its own advisor's diagnostics; a folder removed
stops its watcher and clears what it published; a folder added is analysed.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from pygls.uris import from_fs_path

from gpa_lsp.analysis.advisor import advise_bundle
from gpa_lsp.config import from_mapping, load
from gpa_lsp.server.results import PathResolver
from gpa_lsp.server.server import GpaLanguageServer

from .lsp_session import change_folders, open_doc, session, wait_for

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
CASES = ("restrict_fir", "transpose_banks")


def _copy(tmp_path: Path, case: str) -> tuple[Path, dict]:
    """A copy of kernels/<case> and the scoped settings that map the bundle's recorded paths onto it."""
    ws = tmp_path / case
    shutil.copytree(KERNELS / case, ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    if (KERNELS / "common").is_dir() and not (tmp_path / "common").exists():
        shutil.copytree(KERNELS / "common", tmp_path / "common")
    return ws, {"paths": {"sourceMap": {str((KERNELS / case).resolve()): "."}}}


def _expected(ws: Path, case: str) -> tuple[Path, list[tuple[int, str]]]:
    """The source of the case and the advisor's (0-based line, optimizer) on it, computed here."""
    cfg = from_mapping({"paths": {"source_map": {str((KERNELS / case).resolve()): "."}}}, base=load(ws))
    report = advise_bundle(cfg.bundle_path, config=cfg)
    resolve = PathResolver(ws)
    source = (ws / cfg.build.sources[0]).resolve()
    want = sorted((a.location.line - 1, a.optimizer) for k in report.kernels for a in k.advice
                  if a.location and resolve(a.location.file) == source)
    assert want, f"{case}: the recorded bundle gives no advice on its source; pick another case"
    return source, want


def _diags(client, uri: str) -> list[tuple[int, str]]:
    return sorted((d.range.start.line, d.code) for d in client.diagnostics.get(uri, []))


def _analysed(client, root: Path) -> bool:
    uri = from_fs_path(str(root))
    return any(s.get("root") == uri and s.get("result") for s in client.status)


async def test_two_folders_each_get_their_own_diagnostics_and_a_removed_one_is_cleared(tmp_path):
    (a, sa), (b, sb) = (_copy(tmp_path, c) for c in CASES)
    (src_a, want_a), (src_b, want_b) = _expected(a, CASES[0]), _expected(b, CASES[1])
    uri_a, uri_b = from_fs_path(str(src_a)), from_fs_path(str(src_b))
    async with session(a, folders={a: sa, b: sb}) as client:
        open_doc(client, src_a)
        open_doc(client, src_b)
        await wait_for(lambda: _analysed(client, a) and _analysed(client, b), 120, "both folders analysed")
        await wait_for(lambda: _diags(client, uri_a) == want_a and _diags(client, uri_b) == want_b, 30,
                       "each folder's diagnostics")
        assert client.line_heat.get(uri_a) and client.line_heat.get(uri_b)

        change_folders(client, removed=[a])
        await wait_for(lambda: len(client.diagnostics[uri_a]) == 0, 30, "the removed folder's diagnostics cleared")
        await wait_for(lambda: client.line_heat.get(uri_a) == [], 30, "the removed folder's line heat cleared")
        assert _diags(client, uri_b) == want_b

        # break both project files on disk (no didSave: only the watchers can see it); the kept folder's
        # watcher reports its change, the removed folder's watcher is stopped and reports nothing
        for ws in (a, b):
            (ws / "gpa.toml").write_text((ws / "gpa.toml").read_text() + "\n[build\n")
        toml_a, toml_b = from_fs_path(str((a / "gpa.toml").resolve())), from_fs_path(str((b / "gpa.toml").resolve()))
        await wait_for(lambda: client.diagnostics.get(toml_b), 30, "the kept folder's config diagnostic")
        await asyncio.sleep(1.0)
        assert not client.diagnostics.get(toml_a)
        n = len(client.status)
        await asyncio.sleep(0.5)
        assert not [s for s in client.status[n:] if s.get("root") == from_fs_path(str(a))]


async def test_a_folder_added_later_is_analysed(tmp_path):
    (a, sa), (b, sb) = (_copy(tmp_path, c) for c in CASES)
    src_b, want_b = _expected(b, CASES[1])
    uri_b = from_fs_path(str(src_b))
    async with session(a, folders={a: sa}) as client:
        client.set_configuration({"gpa": sb}, scope_uri=from_fs_path(str(b)))
        await wait_for(lambda: _analysed(client, a), 120, "the first folder analysed")
        assert uri_b not in client.diagnostics
        change_folders(client, added=[b])
        await wait_for(lambda: _analysed(client, b), 120, "the added folder analysed")
        await wait_for(lambda: _diags(client, uri_b) == want_b, 30, "the added folder's diagnostics")


def test_a_file_belongs_to_the_innermost_folder(tmp_path):
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    (inner / "k.cu").write_text("")
    (tmp_path / "outer" / "a.cu").write_text("")
    ls = GpaLanguageServer()
    outer_f, inner_f = ls.add_folder(tmp_path / "outer"), ls.add_folder(inner)
    assert ls.folder_of(inner / "k.cu") is inner_f
    assert ls.folder_of(from_fs_path(str(inner / "k.cu"))) is inner_f
    assert ls.folder_of(tmp_path / "outer" / "a.cu") is outer_f
    assert ls.folder_of(tmp_path / "elsewhere.cu") is None
    assert not ls.owns(outer_f, (inner / "k.cu").resolve()) and ls.owns(inner_f, (inner / "k.cu").resolve())
    ls.loop = asyncio.new_event_loop()
    try:
        ls.start_watching()
        watcher = inner_f.observer
        assert watcher is not None and watcher.is_alive() and outer_f.observer.is_alive()
        ls.remove_folder(inner)
        assert not watcher.is_alive() and inner_f.observer is None      # its own watcher stopped
        assert outer_f.observer.is_alive()                              # the other one's still runs
        assert ls.folder_of(inner / "k.cu") is outer_f                  # the enclosing folder owns it now
    finally:
        ls.stop_watching()
        ls.loop.close()
