"""The result cache fails (issue 16, item 5): a missing or unwritable cache folder, a corrupt or deeply
nested latest.json: each a logged warning, and the result is still computed and published."""

from __future__ import annotations

import json
import logging
import threading


from gpa_lsp.config import load
from gpa_lsp.server.cache import SCHEMA, ResultCache
from gpa_lsp.server.pipeline import Stages, cached_outcome, execute

from .lsp_session import session, wait_for


def _not_a_folder(tmp_path):
    home = tmp_path / "cache-is-a-file"
    home.write_text("")
    return home


def test_an_unwritable_cache_is_a_warning_and_the_run_still_gives_its_result(recorded_ws, tmp_path, monkeypatch,
                                                                             caplog):
    monkeypatch.setenv("GPA_LSP_ANALYSIS_PROCESS", "0")
    cache = ResultCache(recorded_ws, home=_not_a_folder(tmp_path))
    with caplog.at_level(logging.WARNING, logger="gpa_lsp.server"):
        out = execute(load(recorded_ws), trusted=False, cancel=threading.Event(), cache=cache, stages=Stages(),
                      profile=False)
        cache.add_history({"kernel": "k", "estimated": 1.2})
    assert out.error is None and out.report is not None and out.report.kernels
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "cannot write" in warnings[0], warnings   # said once, not per write
    assert cache.latest() is None and cache.history() == []
    assert cache.bundle_dir().is_dir()                                       # a temporary folder instead


def _latest(cache: ResultCache, text: str) -> None:
    cache.dir.mkdir(parents=True, exist_ok=True)
    (cache.dir / "latest.json").write_text(text)


def test_corrupt_or_deeply_nested_latest_json_is_ignored(recorded_ws, tmp_path, caplog):
    cache = ResultCache(recorded_ws, home=tmp_path / "cache")
    cfg = load(recorded_ws)
    entry = {"schema": SCHEMA, "key": "k", "root": cache.root, "time": 0, "note": "", "hashes": {},
             "report": {"device": {}, "collector": "cupti", "kernels": []}}
    for text in ("[" * 100_000 + "]" * 100_000,                          # RecursionError in json
                 '{"schema": ' + str(SCHEMA) + ', "report": ' + "[" * 900 + "]" * 900 + "}",
                 json.dumps({**entry, "report": {**entry["report"], "kernels": [{"name": "k", "demangled": "k",
                             "samples": "many", "share": 0.5, "limiter": "latency", "advice": []}]}}),
                 json.dumps({**entry, "report": {**entry["report"], "kernels": "abc"}}),
                 json.dumps({**entry, "note": ["x"]}),
                 json.dumps({**entry, "hashes": {"a.cu": 5}}),
                 b"\xff\xfe not utf-8".decode("latin-1")):
        _latest(cache, text)
        with caplog.at_level(logging.WARNING, logger="gpa_lsp.server"):
            assert cache.latest() is None, text[:80]
            assert cached_outcome(cfg, cache) is None
    _latest(cache, json.dumps(entry))
    assert cache.latest() is not None                                       # a good one still reads


def test_history_keeps_only_items_the_report_can_show(tmp_path):
    cache = ResultCache(tmp_path, home=tmp_path / "cache")
    cache.dir.mkdir(parents=True)
    (cache.dir / "history.json").write_text(json.dumps([1, "x", {"estimated": "1.5"}, {"estimated": True},
                                                        {"kernel": "k", "estimated": 1.5}]))
    assert cache.history() == [{"kernel": "k", "estimated": 1.5}]


async def test_the_editor_gets_results_with_no_usable_cache(recorded_ws, tmp_path):
    async with session(recorded_ws, cache=_not_a_folder(tmp_path)) as client:
        await wait_for(lambda: any(s.get("result") for s in client.status), 120, "the recorded result published")
        assert any(uri.endswith(".cu") and d for uri, d in client.diagnostics.items())
        assert not [m for m in client.messages if "internal error" in m.message]
