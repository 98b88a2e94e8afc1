"""The server never outlives its editor, nor leaves a process behind (issue 16, item 3): on SIGTERM
during a run, on stdin EOF (the editor went away) and on `exit`, it leaves within 2 s and kills the
harness with what it started, a `setsid` child included."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time

import pytest

from gpa_lsp import procs

from process_state import alive

from .lsp_session import save_doc, session, wait_for

pytestmark = pytest.mark.skipif(not procs.runner_available(), reason="needs Linux /proc and prctl")

HARNESS = textwrap.dedent("""\
    import os, subprocess, time
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    open("pids.tmp", "w").write(f"{os.getpid()} {child.pid}")
    os.replace("pids.tmp", "pids")
    time.sleep(600)
    """)


def _workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    (root / "h.py").write_text(HARNESS)
    (root / "gpa.toml").write_text(textwrap.dedent(f"""\
        [harness]
        command = ["{sys.executable}", "h.py"]
        timeout = 600

        [profile]
        collector = "cupti"

        [server]
        debounce_ms = 50
        """))
    return root


async def _running(client, root) -> list[int]:
    save_doc(client, root / "k.cu")
    await wait_for(lambda: (root / "pids").exists(), 120, "the harness to start")
    pids = [int(x) for x in (root / "pids").read_text().split()]
    assert all(alive(p) for p in pids)
    return pids


async def _ended(client, pids, within: float) -> float:
    start = time.monotonic()
    await wait_for(lambda: client._server.returncode is not None, within + 5, "the server to exit")
    took = time.monotonic() - start
    await wait_for(lambda: not any(alive(p) for p in pids), 5, "the harness and its setsid child to be killed")
    return took


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_to_the_server_during_a_run_kills_the_harness(tmp_path, sig):
    root = _workspace(tmp_path)
    async with session(root, trusted=True) as client:
        pids = await _running(client, root)
        os.kill(client._server.pid, sig)
        assert await _ended(client, pids, 2) < 2 + 1


async def test_stdin_eof_during_a_run_ends_the_server_and_the_harness(tmp_path):
    root = _workspace(tmp_path)
    async with session(root, trusted=True) as client:
        pids = await _running(client, root)
        client._server.stdin.close()                   # the editor went away
        assert await _ended(client, pids, 2) < 2 + 1


@pytest.mark.parametrize("shutdown_first", [True, False])
async def test_exit_during_a_run_ends_the_server_and_the_harness(tmp_path, shutdown_first):
    root = _workspace(tmp_path)
    async with session(root, trusted=True) as client:
        pids = await _running(client, root)
        if shutdown_first:
            await client.shutdown_async(None)
        client.exit(None)                              # stdin stays open
        assert await _ended(client, pids, 2) < 2 + 1
        assert client._server.returncode == (0 if shutdown_first else 1)   # as the LSP specification says
