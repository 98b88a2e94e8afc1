"""Where the analysis results live: the project's one cache-folder rule (gpa_lsp/user_cache.py), the
same folder as the collector's; GPA_LSP_CACHE, the older name, still names the results' folder alone."""

from __future__ import annotations

from gpa_lsp.server.cache import ResultCache
from gpa_lsp.user_cache import collector_cache_dir


def test_the_results_follow_gpa_cache_dir_like_the_collectors_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_LSP_CACHE", raising=False)
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache = ResultCache(tmp_path / "project")
    assert cache.dir.parent == tmp_path / "mine" / "gpa-lsp" == collector_cache_dir()


def test_without_gpa_cache_dir_both_follow_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("GPA_LSP_CACHE", raising=False)
    monkeypatch.delenv("GPA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ResultCache(tmp_path / "project").dir.parent == tmp_path / "xdg" / "gpa-lsp" == collector_cache_dir()


def test_gpa_lsp_cache_names_the_results_folder_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_LSP_CACHE", str(tmp_path / "results"))
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "mine"))
    assert ResultCache(tmp_path / "project").dir.parent == tmp_path / "results"
    assert collector_cache_dir() == tmp_path / "mine" / "gpa-lsp"


def test_without_any_variable_both_are_gpa_lsp_under_home_cache(tmp_path, monkeypatch):
    """The folder as it was before the one rule: ~/.cache/gpa-lsp."""
    for var in ("GPA_LSP_CACHE", "GPA_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "home" / ".cache" / "gpa-lsp"
    assert ResultCache(tmp_path / "project").dir.parent == home == collector_cache_dir()


def test_an_empty_gpa_lsp_cache_is_unset(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_LSP_CACHE", "")
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "mine"))
    assert ResultCache(tmp_path / "project").dir.parent == tmp_path / "mine" / "gpa-lsp"
