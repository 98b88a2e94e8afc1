"""Runs that go wrong: a crashing or hanging harness, and a run cancelled by a newer save.

The harnesses are small dummy programs (no GPU needed): the collector
starts them like a real one, so what a user sees when theirs crashes or
hangs is what is checked here: a message and a diagnostic on the
[harness] command line of gpa.toml, never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap

from lsprotocol import types
from pygls.uris import from_fs_path

from .lsp_session import open_doc, save_doc, session, states, wait_for


def _workspace(tmp_path, harness: list[str], timeout: float = 60):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    cmd = ", ".join(f'"{a}"' for a in harness)
    (root / "gpa.toml").write_text(textwrap.dedent(f"""\
        [harness]
        command = [{cmd}]
        timeout = {timeout}

        [profile]
        collector = "cupti"

        [server]
        debounce_ms = 50
        """))
    return root


def _no_trace(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text


def gone(pid: int) -> bool:
    """Is the process not running (reaped, or a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except (FileNotFoundError, ProcessLookupError):   # reaped before, or while, /proc was read
        return True


async def test_crashing_harness_is_reported_not_traced(tmp_path):
    root = _workspace(tmp_path, [sys.executable, "-c", "import os, signal; print('starting'); os.kill(os.getpid(), signal.SIGSEGV)"])
    async with session(root, trusted=True) as client:
        open_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        cfg = from_fs_path(str(root / "gpa.toml"))
        diags = await wait_for(lambda: client.diagnostics.get(cfg), 120, "a diagnostic on gpa.toml")
        assert diags[0].range.start.line == 1                      # command = [...]
        assert diags[0].severity == types.DiagnosticSeverity.Error
        assert "crashed with SIGSEGV" in diags[0].message
        assert "starting" in diags[0].message                      # the harness's output tail is shown
        _no_trace(diags[0].message)
        # the message follows the diagnostics (publish, status, then window/showMessage)
        errors = await wait_for(lambda: [m.message for m in client.messages if m.type == types.MessageType.Error],
                                10, "an error message")
        assert "crashed" in errors[0]
        _no_trace(errors[0])
        assert states(client)[-1] == "error"


async def test_hanging_harness_times_out(tmp_path):
    root = _workspace(tmp_path, ["sleep", "600"], timeout=2)
    async with session(root, trusted=True) as client:
        save_doc(client, root / "k.cu")
        cfg = from_fs_path(str(root / "gpa.toml"))
        diags = await wait_for(lambda: client.diagnostics.get(cfg), 60, "the timeout diagnostic")
        assert "longer than its 2 s timeout" in diags[0].message
        assert diags[0].range.start.line == 1
        _no_trace(diags[0].message)


async def test_second_save_cancels_the_run_and_kills_its_processes(tmp_path):
    # each run writes the harness's pid, then hangs
    root = _workspace(tmp_path, ["sh", "-c", "echo $$ >> pids; exec sleep 600"], timeout=300)
    async with session(root, trusted=True) as client:
        save_doc(client, root / "k.cu")
        pids = root / "pids"
        await wait_for(lambda: pids.exists() and pids.read_text().split(), 60, "the first harness to start")
        first = int(pids.read_text().split()[0])
        assert os.path.exists(f"/proc/{first}")
        save_doc(client, root / "k.cu")
        await wait_for(lambda: len(pids.read_text().split()) >= 2, 60, "the second harness to start")

        assert await wait_for(lambda: gone(first), 10, "the first harness to be killed")
        second = int(pids.read_text().split()[1])
        assert not gone(second)
        # the cancelled run published no error
        assert not client.diagnostics.get(from_fs_path(str(root / "gpa.toml")))
        # the user's cancel (gpa.cancel) stops the second one too
        res = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="gpa.cancel"))
        assert (res["cancelled"] if isinstance(res, dict) else res.cancelled) is True
        assert await wait_for(lambda: gone(second), 10, "the second harness to be killed")
        await wait_for(lambda: states(client)[-1] == "idle", 10, "the idle status")
        assert "cancelled" in client.status[-1]["message"]


async def test_change_on_disk_starts_a_run_and_progress_cancel_stops_it(tmp_path):
    """A git checkout / another editor changes a source: watchdog sees it; the progress cancel button stops the run."""
    root = _workspace(tmp_path, ["sh", "-c", "echo $$ >> pids; exec sleep 600"], timeout=300)
    async with session(root, trusted=True) as client:
        await wait_for(lambda: client.status, 30, "the first status")
        await asyncio.sleep(0.5)
        (root / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 2.0f; }\n")   # no didSave
        pids = root / "pids"
        await wait_for(lambda: pids.exists() and pids.read_text().split(), 60, "the harness started by watchdog")
        pid = int(pids.read_text().split()[0])
        token = await wait_for(lambda: next((t for t, v in client.progress_reports.items()
                                             if v and isinstance(v[0], types.WorkDoneProgressBegin)), None),
                               30, "a work-done progress")
        assert client.progress_reports[token][0].cancellable
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

        assert await wait_for(lambda: gone(pid), 15, "the harness to be killed by the cancel button")
        await wait_for(lambda: isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd), 10,
                       "the progress to end")
        assert len(pids.read_text().split()) == 1      # and nothing was restarted


async def test_a_folder_without_gpa_toml_is_not_profiled_on_save(tmp_path):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    async with session(root, trusted=True) as client:
        open_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        save_doc(client, root / "k.cu")
        await wait_for(lambda: any("no gpa.toml" in (s.get("message") or "") for s in client.status), 30,
                       "the not-configured status")
        await asyncio.sleep(1.0)
        assert not {"building", "profiling", "error"} & set(states(client))
        assert sum("no gpa.toml" in m.message for m in client.messages) == 1
        assert not [m for m in client.messages if m.type == types.MessageType.Error]
