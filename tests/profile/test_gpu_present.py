"""One "is there a GPU" check (profile/gpu_check.py): the language server's choice between profiling
and replaying and `gpa verify`'s choice to time fixes both follow gpu_check.gpu_present, which looks
at the device nodes only (no driver call)."""

from __future__ import annotations

from types import SimpleNamespace

from gpa_lsp.commands import verify as verify_cmd
from gpa_lsp.config import Config
from gpa_lsp.profile import gpu_check
from gpa_lsp.server.pipeline import Stages


def _options(static_only: bool = False):
    args = SimpleNamespace(top=None, pairs=None, static_only=static_only, no_store=True, fix=None)
    return verify_cmd.options_of(args, Config())


def test_the_server_and_gpa_verify_ask_the_same_check(monkeypatch):
    for nodes, present in (((), False), (("/dev/nvidia0",), True), (("/dev/dxg",), True)):
        monkeypatch.setattr(gpu_check, "_device_nodes", lambda nodes=nodes: nodes)
        assert gpu_check.gpu_present() is present
        assert Stages().has_gpu() is present
        assert _options().dynamic is present
        assert _options(static_only=True).dynamic is False


def test_no_driver_call(monkeypatch):
    def refuse():
        raise AssertionError("gpu_present must not load the driver")

    monkeypatch.setattr(gpu_check, "_load_libcuda", refuse)
    monkeypatch.setattr(gpu_check, "_device_nodes", lambda: ("/dev/nvidia0",))
    assert gpu_check.gpu_present()
