"""Running NVIDIA's tools on untrusted input: bounded time, own process group, safe paths.

A cubin from a bundle is input from another machine; one with a single byte
changed can make nvdisasm spin forever (issue 16). So every tool run here has
a timeout sized to its input, runs in its own process group (``setsid``) and
is killed with that group when the timeout passes or the caller is
interrupted; a path handed to a tool is absolute, so a file named ``-x.cubin``
can never be read as an option. Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Mapping, Sequence

BASE_TIMEOUT_S = 30.0
BYTES_PER_SECOND = 100_000      # 1 s more per 100 KB of input: nvdisasm does ~1 MB/s on a large cubin


def tool_timeout(nbytes: int) -> float:
    """Seconds a tool may take on ``nbytes`` of input (30 s + 1 s per 100 KB)."""
    return BASE_TIMEOUT_S + max(0, nbytes) / BYTES_PER_SECOND


def safe_path(path: str | os.PathLike) -> str:
    """``path`` made absolute: it then starts with ``/``, never with ``-`` (an option to the tool)."""
    return os.path.abspath(os.fspath(path))


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group (it leads one: started with ``start_new_session``) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except OSError:
        pass


def run_tool(argv: Sequence[str], *, timeout: float, cwd: str | os.PathLike | None = None,
             env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True)`` in a new process group that is killed
    whole on timeout (``subprocess.TimeoutExpired``) or on any exception in the caller (Ctrl-C, a
    signal turned into SystemExit): no tool outlives the call."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env) if env is not None else None, text=True,
                            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            errors="replace")
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:
        kill_group(proc)
        try:            # drain and reap; a descendant that left the group may hold the pipes
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
