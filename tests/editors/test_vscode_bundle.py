"""The server bundled in the .vsix (editors/vscode/bundled, the vscode-python-tools-extension-template
layout) starts from bundled/libs alone: an interpreter with no site-packages (`python -I -S`)
answers `initialize`; gpa.importStrategy decides which gpa_lsp wins. The libraries are written by
the packaging step's own script (editors/vscode/scripts/bundle_python.py), cached per content."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# writes the bundled libraries into a shared cache, as the e2e's packaging does in the tree
pytestmark = pytest.mark.xdist_group("vscode")

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"
SERVER = EXT / "bundled" / "tool" / "lsp_server.py"


def _key() -> str:
    h = hashlib.sha256()
    for f in sorted([ROOT / "pyproject.toml", EXT / "scripts" / "bundle_python.py",
                     *(ROOT / "gpa_lsp").rglob("*.py"), *(ROOT / "gpa_lsp" / "data").rglob("*")]):
        if f.is_file():
            h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A copy of bundled/ (tool + libs) as the .vsix ships it."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpa-lsp" / "vsix-bundle" / _key()
    libs = cache / "libs"
    if not (libs / "gpa_lsp" / "server" / "server.py").is_file():
        proc = subprocess.run([sys.executable, str(EXT / "scripts" / "bundle_python.py"), "--out", str(libs),
                               "--python", f"{sys.version_info.major}.{sys.version_info.minor}"],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    out = tmp_path_factory.mktemp("ext") / "bundled"
    (out / "tool").mkdir(parents=True)
    (out / "tool" / "lsp_server.py").write_bytes(SERVER.read_bytes())
    (out / "libs").symlink_to(libs)
    return out


def _message(proc) -> dict:
    length = None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its output: " + proc.stderr.read().decode(errors="replace")[-3000:]
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return json.loads(proc.stdout.read(length))


def _send(proc, msg: dict) -> None:
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def _initialize(argv, env=None, cwd=None) -> dict:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=cwd)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": os.getpid(), "rootUri": None, "capabilities": {}}})
        while True:
            msg = _message(proc)
            if msg.get("id") == 1:
                break
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        _send(proc, {"jsonrpc": "2.0", "method": "exit"})
        proc.wait(30)
        return msg
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bundled_server_starts_with_no_site_packages(bundle, tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "GPA_IMPORT_STRATEGY": "useBundled"}
    msg = _initialize([sys.executable, "-I", "-S", str(bundle / "tool" / "lsp_server.py")], env=env, cwd=tmp_path)
    assert msg["result"]["serverInfo"]["name"] == "gpa-lsp"
    assert "gpa.profile" in msg["result"]["capabilities"]["executeCommandProvider"]["commands"]


def test_bundled_server_analyses_a_recorded_project(bundle, tmp_path):
    """The analysis runs in a spawned worker process that re-imports the server script: it must not
    start a second server there (it did, and the analysis never came back)."""
    import shutil
    import threading
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "kernels" / "hotspot_double", ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    env = dict(os.environ, GPA_IMPORT_STRATEGY="useBundled", GPA_LSP_CACHE=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([sys.executable, str(bundle / "tool" / "lsp_server.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    uri = ws.as_uri()
    got: list = []

    def client():
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "ws"}],
            "capabilities": {}, "initializationOptions": {"trusted": False, "settings": {"profile": {"collector": "replay"}}}}})
        while _message(proc).get("id") != 1:
            pass
        _send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        doc = ws / "original.cu"
        _send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": doc.as_uri(), "languageId": "cuda-cpp", "version": 1, "text": doc.read_text()}}})
        while True:
            m = _message(proc)
            if "id" in m and "method" in m:          # workspace/configuration, progress: answer plainly
                result = [{} for _ in m["params"]["items"]] if m["method"] == "workspace/configuration" else None
                _send(proc, {"jsonrpc": "2.0", "id": m["id"], "result": result})
            elif m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"]:
                got.extend(m["params"]["diagnostics"])
                return

    t = threading.Thread(target=client, daemon=True)
    t.start()
    t.join(120)
    proc.kill()
    proc.wait()
    assert got, "no diagnostics from the bundled server within 120 s: " + proc.stderr.read().decode(errors="replace")[-2000:]
    assert all(d["source"] == "gpa" for d in got)


def _fake_env_gpa(tmp_path) -> Path:
    """An environment whose gpa_lsp is not the bundled one: its server prints a marker and exits."""
    site = tmp_path / "site"
    (site / "gpa_lsp" / "server").mkdir(parents=True)
    (site / "gpa_lsp" / "__init__.py").write_text("")
    (site / "gpa_lsp" / "server" / "__init__.py").write_text("")
    (site / "gpa_lsp" / "server" / "server.py").write_text(
        "def main(argv=None):\n    print('FROM-ENVIRONMENT')\n    return 0\n")
    return site


@pytest.mark.parametrize("strategy,expect_env", [("useBundled", False), ("fromEnvironment", True)])
def test_import_strategy_decides_which_gpa_lsp_runs(bundle, tmp_path, strategy, expect_env):
    site = _fake_env_gpa(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(site),
           "GPA_IMPORT_STRATEGY": strategy}
    if expect_env:
        out = subprocess.run([sys.executable, "-S", str(bundle / "tool" / "lsp_server.py")], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert out.returncode == 0 and "FROM-ENVIRONMENT" in out.stdout
    else:
        msg = _initialize([sys.executable, "-S", str(bundle / "tool" / "lsp_server.py")], env=env, cwd=tmp_path)
        assert msg["result"]["serverInfo"]["name"] == "gpa-lsp"


def test_too_old_python_is_told_what_to_do(tmp_path):
    """The version check runs before any import (the script itself is plain Python 3)."""
    text = SERVER.read_text()
    assert text.index("sys.version_info < (3, 11)") < text.index("from gpa_lsp")
    assert "gpa.server.python" in text


def test_vscodeignore_ships_the_bundle():
    lines = (EXT / ".vscodeignore").read_text().split()
    assert "!bundled/tool/lsp_server.py" in lines and "!bundled/libs/**" in lines
    assert "bundled/libs/" in (ROOT / ".gitignore").read_text()
    pkg = json.loads((EXT / "package.json").read_text())
    assert "bundle:python" in pkg["scripts"]["package"]
