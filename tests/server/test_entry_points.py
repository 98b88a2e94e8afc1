"""`gpa serve` / `gpa-lsp` entry points: stdio is covered by every other test; here the --tcp mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _message(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_gpa_serve_over_tcp_answers_initialize(tmp_path):
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO), GPA_LSP_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "gpa_lsp.cli", "serve", "--tcp", f"127.0.0.1:{port}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.1)
        with sock:
            sock.sendall(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
            data = b""
            while b"capabilities" not in data or not data.rstrip().endswith(b"}"):
                chunk = sock.recv(65536)
                assert chunk, "connection closed"
                data += chunk
        body = json.loads(data.split(b"\r\n\r\n", 1)[1])
        caps = body["result"]["capabilities"]
        assert caps["hoverProvider"] and caps["codeLensProvider"] is not None
        assert set(caps["executeCommandProvider"]["commands"]) >= {"gpa.profile", "gpa.report", "gpa.cancel",
                                                                 "gpa.applyAndMeasure"}
        assert body["result"]["serverInfo"]["name"] == "gpa-lsp"
    finally:
        proc.kill()
        proc.wait(10)


def test_bad_tcp_addresses_end_with_a_message(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), GPA_LSP_CACHE=str(tmp_path / "cache"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [(["-m", "gpa_lsp.server", "--tcp", "2087"], "is not HOST:PORT"),
                 (["-m", "gpa_lsp.server", "--tcp", "127.0.0.1:http"], "is not HOST:PORT"),
                 (["-m", "gpa_lsp.server", "--tcp", "127.0.0.1:70000"], "port in 1-65535"),
                 (["-m", "gpa_lsp.server", "--tcp", "no such host.invalid:2087"], "cannot listen on"),
                 (["-m", "gpa_lsp.cli", "serve", "--tcp", f"127.0.0.1:{port}"], "cannot listen on 127.0.0.1")]
        for argv, needle in cases:
            proc = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60)
            assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
            assert needle in proc.stderr and "Traceback" not in proc.stderr, (argv, proc.stderr)
