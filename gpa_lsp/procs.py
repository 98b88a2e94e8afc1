"""Processes gpa starts: bounded in time, killed with everything they started, never outliving gpa.

A cubin from a bundle is input from another machine; one with a single byte
changed can make nvdisasm spin forever (issue 16). So every tool run here has
a timeout sized to its input, runs in its own process group (``setsid``) and
is killed with that group when the timeout passes or the caller is
interrupted (and by the kernel when gpa dies); a path handed to a tool is
absolute, so a file named ``-x.cubin`` can never be read as an option. The
harness runs under the runner below (``runner_argv``). Standard library only,
no package imports: this file is also run as a script (the runner).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
                            errors="replace", preexec_fn=die_with_parent if _PRCTL is not None else None)
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


# ---------------------------------------------------------------- process trees (Linux)
#
# A harness may leave its process group (``setsid``, a daemon) and so escape ``killpg``. On Linux
# a *runner* process stands between gpa and the harness: it is a child subreaper (orphans of the
# harness are re-parented to it, not to init), so every process the harness started stays its
# descendant, found through /proc and killed when the harness exits, when the run is cancelled or
# timed out (the runner gets SIGTERM with the group), and when gpa itself dies (the runner asked for
# SIGTERM on its parent's death). Elsewhere the runner is skipped and the process group is all.

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


_PRCTL = _load_prctl()


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Have the kernel send ``sig`` to this process when the thread that started it dies (Linux).
    Safe as a ``preexec_fn``: one system call through a function looked up at import."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def become_subreaper() -> bool:
    return _PRCTL is not None and _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _stat(pid: int | str) -> tuple[int, bytes] | None:
    """(parent pid, state letter) of a process from /proc; None when it is gone (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        rest = data[data.rindex(b")") + 2:].split()         # the name may hold spaces and parentheses
        return int(rest[1]), rest[0]
    except (OSError, ValueError, IndexError):
        return None


def parent_pid(pid: int) -> int | None:
    """The parent of a live process (Linux /proc); None when unknown."""
    st = _stat(pid)
    return st[0] if st is not None else None


def _process_table() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, state letter) of every process /proc shows."""
    out: dict[int, tuple[int, bytes]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(name)) is not None:      # None: gone meanwhile
            out[int(name)] = st
    return out


def descendants(pid: int) -> list[int]:
    """The live (not zombie) descendants of ``pid``, parents before children."""
    children: dict[int, list[int]] = {}
    for p, (ppid, state) in _process_table().items():
        if state != b"Z":
            children.setdefault(ppid, []).append(p)
    out, todo = [], list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def kill_tree(pid: int) -> list[int]:
    """SIGKILL every descendant of ``pid`` (not ``pid`` itself). Each is stopped first, so that none
    can fork or exit (re-parenting its children away) while the tree is collected."""
    if not os.path.isdir("/proc/self"):
        return []
    stopped: list[int] = []
    seen: set[int] = set()
    for _ in range(100):                      # a fork bomb gets at most this many rounds
        new = [p for p in descendants(pid) if p not in seen]
        if not new:
            break
        for p in new:
            seen.add(p)
            try:
                os.kill(p, signal.SIGSTOP)
                stopped.append(p)
            except (ProcessLookupError, PermissionError):
                pass
    for p in stopped:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return stopped


RUNNER_FLAG = "--gpa-runner"


def runner_available() -> bool:
    return _PRCTL is not None and bool(sys.executable) and os.path.isdir("/proc/self")


def runner_argv(argv: Sequence[str], status_fd: int) -> list[str]:
    """``argv`` run under the runner (this file run as a script, in isolated mode: no user site, no
    environment variables of Python's own, nothing from the working folder on ``sys.path``; and no
    ``site`` at all (``-S``): the runner needs the standard library only, and a virtual environment's
    ``.pth`` files cost every harness run (twice per ``gpa profile``) the interpreter's start-up)."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), RUNNER_FLAG, str(status_fd), str(os.getpid()),
            "--", *argv]


def _runner(args: list[str]) -> int:
    """The runner's main: start ``argv``, report on ``status_fd`` whether it started (``0`` or the
    errno), wait for it while reaping orphans, then kill whatever it left; exit as it did."""
    status_fd, parent, argv = int(args[0]), int(args[1]), args[3:]
    become_subreaper()
    die_with_parent(signal.SIGTERM)
    signals: list[int] = []

    def on_signal(sig, _frame):
        signals.append(sig)
        kill_tree(os.getpid())

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)
    if os.getppid() != parent:                # gpa died before the request above took effect
        return 128 + signal.SIGTERM
    try:
        child = subprocess.Popen(argv)        # stdio, folder, environment and group: the runner's
    except OSError as exc:
        os.write(status_fd, f"{exc.errno or 1}\n".encode())
        return 127
    os.write(status_fd, b"0\n")
    os.close(status_fd)
    if signals:                               # a signal while starting it
        kill_tree(os.getpid())
    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)       # also reaps the orphans re-parented here
        except ChildProcessError:
            break
        if pid == child.pid:
            status = st
    child.returncode = 0                      # reaped above; keeps Popen from waiting at exit
    kill_tree(os.getpid())                    # what the harness left behind (setsid children, daemons)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                time.sleep(0.01)
        except ChildProcessError:
            break
    if status is None:
        return 128 + (signals[0] if signals else signal.SIGKILL)
    if os.WIFSIGNALED(status):                # die the same way, so gpa reports the same crash
        sig = os.WTERMSIG(status)
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # the harness's core, not the runner's
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        return 128 + sig
    return os.WEXITSTATUS(status)


if __name__ == "__main__" and len(sys.argv) > 4 and sys.argv[1] == RUNNER_FLAG:
    sys.exit(_runner(sys.argv[2:]))
