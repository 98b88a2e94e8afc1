"""Nothing a harness starts outlives its run (issue 16, item 3): the runner (gpa_lsp/procs.py) kills
what left the process group (`setsid`) when the harness ends or times out, and when `gpa profile`
is killed by SIGTERM or SIGHUP. Linux only (a child subreaper and /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpa_lsp import procs
from gpa_lsp.errors import HarnessError
from gpa_lsp.profile import harness
from process_state import alive, gone

pytestmark = pytest.mark.skipif(not procs.runner_available(), reason="needs Linux /proc and prctl")
ROOT = Path(__file__).resolve().parents[2]

# starts a `setsid` grandchild (its own session: no killpg reaches it), writes both pids, then
# exits at once or hangs
HARNESS = textwrap.dedent("""\
    import os, subprocess, sys, time
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    open("pids.tmp", "w").write(f"{os.getpid()} {child.pid}")
    os.replace("pids.tmp", "pids")
    if sys.argv[1] == "hang":
        time.sleep(600)
    """)


def _pids(folder: Path, timeout: float = 60, starter: subprocess.Popen | None = None) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (folder / "pids").exists():
            return [int(x) for x in (folder / "pids").read_text().split()]
        if starter is not None and starter.poll() is not None:
            raise AssertionError(f"gpa exited ({starter.returncode}) before the harness started: "
                                 + starter.stderr.read().decode(errors="replace")[-2000:])
        time.sleep(0.05)
    raise AssertionError("the harness did not start")


def test_a_setsid_child_of_a_normal_run_is_killed(tmp_path):
    (tmp_path / "h.py").write_text(HARNESS)
    res = harness.run([sys.executable, "h.py", "exit"], cwd=tmp_path, timeout=60)
    assert res.returncode == 0
    assert gone(_pids(tmp_path), 2)


def test_a_setsid_child_of_a_timed_out_run_is_killed(tmp_path):
    (tmp_path / "h.py").write_text(HARNESS)
    with pytest.raises(HarnessError, match="timeout"):
        harness.run([sys.executable, "h.py", "hang"], cwd=tmp_path, timeout=3)
    assert gone(_pids(tmp_path), 2)


def _hangup_as_from_a_terminal():
    """SIGHUP and SIGTERM at their default action and unblocked in gpa, as when run from a terminal:
    a disposition of SIG_IGN (``nohup``) or a blocked mask survives exec, and the suite's workers may
    hand either down (seen: gpa outlived SIGHUP in the full suite under xdist, never alone)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP, signal.SIGTERM})


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_gpa_profile_killed_by_a_signal_leaves_no_harness(tmp_path, sig):
    (tmp_path / "h.py").write_text(HARNESS)
    (tmp_path / "gpa.toml").write_text(f'[harness]\ncommand = ["{sys.executable}", "h.py", "hang"]\ntimeout = 600\n')
    # GPA_SKIP_GPU_CHECK: past the check for a GPU before the run (a harness that needs none)
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPA_CACHE_DIR=str(tmp_path / "cache"), GPA_SKIP_GPU_CHECK="1")
    gpa = subprocess.Popen([sys.executable, "-m", "gpa_lsp.cli", "profile", str(tmp_path), "--collector", "cupti",
                            "--out", str(tmp_path / "x.gpabundle")], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, preexec_fn=_hangup_as_from_a_terminal)
    try:
        pids = _pids(tmp_path, 240, gpa)
        assert all(alive(p) for p in pids)
        gpa.send_signal(sig)
        gpa.wait(10)
        assert gone(pids), f"left running after {sig.name}: {[p for p in pids if alive(p)]}"
    finally:
        gpa.kill()
        gpa.wait()
