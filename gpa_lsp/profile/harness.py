"""Run the user's harness: timeout, cancellation, output tail, clear failures.

The harness runs in its own process group (``start_new_session``) so that a
timeout or a cancel kills everything it started (a shell, ``ncu`` and the
program under it), not only the first process; on Linux under a runner
(gpa_lsp/procs.py) that also reaches what left the group (``setsid``) and
kills it when the harness ends or gpa dies. Output is drained by two
threads into bounded buffers, so a chatty harness can neither block on a full
pipe nor eat memory. Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .. import procs
from ..errors import HarnessError, ProfilingError

TAIL_CHARS = 8000
_KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str          # tail
    stderr: str          # tail
    wall_s: float

    @property
    def output_tail(self) -> str:
        return _join_tail(self.stdout, self.stderr)


def _join_tail(out: str, err: str) -> str:
    parts = []
    if out.strip():
        parts.append("--- stdout (tail) ---\n" + out.rstrip())
    if err.strip():
        parts.append("--- stderr (tail) ---\n" + err.rstrip())
    return "\n".join(parts)


class _Tail:
    """Keeps the last ``limit`` characters of a stream, read on its own thread."""

    def __init__(self, stream, limit: int, echo: Callable[[str], None] | None) -> None:
        self._chunks: deque[str] = deque()
        self._size = 0
        self._limit = limit
        self._echo = echo
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for raw in iter(lambda: stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536), b""):
            text = raw.decode("utf-8", "replace")
            if self._echo:
                self._echo(text)
            self._chunks.append(text)
            self._size += len(text)
            while self._size - len(self._chunks[0]) >= self._limit and len(self._chunks) > 1:
                self._size -= len(self._chunks.popleft())
        stream.close()

    def text(self, timeout: float = 2.0) -> str:
        self._thread.join(timeout)
        return "".join(self._chunks)[-self._limit:]


def argv_of(command: Sequence[str] | str) -> tuple[list[str], bool]:
    """(argv, via_shell). A string is the user's own shell line, the one place a shell is used."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command], True
    argv = [str(a) for a in command]
    if not argv:
        raise HarnessError("the harness command is empty", "set [harness] command in gpa.toml")
    return argv, False


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(_KILL_GRACE_S)
            # the leader is gone; make sure no member of its group is left behind
            if sig == signal.SIGTERM:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue


def _start(argv: list[str], cwd, env: dict[str, str], what: str) -> subprocess.Popen:
    """Start ``argv`` in a new session; on Linux under the runner (``procs.runner_argv``), which keeps
    every process it starts, ``setsid`` ones included, within reach and kills them with the run.
    The runner says on a pipe whether ``argv`` started, so a missing program is the same clear
    error with or without it."""
    errno_ = 0
    if not procs.runner_available():
        try:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            errno_ = exc.errno or 1
    else:
        r, w = os.pipe()
        try:
            proc = subprocess.Popen(procs.runner_argv(argv, w), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                    pass_fds=(w,))
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        with os.fdopen(r, "rb") as status:
            word = status.read().strip()        # "0" once started; the errno; b"" if the runner died
        errno_ = int(word) if word.isdigit() else 0
        if not errno_:
            return proc
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    if errno_ == errno.ENOENT:
        raise HarnessError(f"the {what} program {argv[0]!r} was not found",
                           "build first (gpa profile builds), or fix [harness] command in gpa.toml")
    if errno_ in (errno.EACCES, errno.EPERM):
        raise HarnessError(f"the {what} program {argv[0]!r} is not executable", "chmod +x it, or fix [harness] command")
    raise HarnessError(f"the {what} program {argv[0]!r} could not be started: {os.strerror(errno_)}",
                       "fix [harness] command in gpa.toml")


def _exit_notice(proc: subprocess.Popen) -> int | None:
    """A pidfd of ``proc`` (Linux 5.3+), readable once it exits; None where there is none."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def _waited(proc: subprocess.Popen, exited: int | None, timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``proc`` to exit; True once it has (and is reaped). With a pidfd
    the wait ends as the process does: ``Popen.wait(timeout)`` polls with sleeps growing to 16 ms
    and more, which added 7 ms on average to every harness run (a warm `gpa profile` of a 0.4 s
    harness is mostly fixed costs: benchmarks/profiling/README.md)."""
    if exited is None:
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    if not select.select([exited], [], [], timeout)[0]:
        return False
    proc.wait()
    return True


def run(command: Sequence[str] | str, *, cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None, timeout: float = 300.0,
        cancel: threading.Event | None = None, wrapper: Sequence[str] = (),
        what: str = "harness", echo: Callable[[str], None] | None = None,
        tail_chars: int = TAIL_CHARS, check: bool = True) -> RunResult:
    """Run ``wrapper + command`` and wait for it.

    ``env`` is added to the current environment. Raises :class:`HarnessError`
    on a crash (signal), non-zero exit (when ``check``), timeout or cancel;
    its ``output_tail`` holds the end of stdout/stderr.
    """
    with start(command, cwd=cwd, env=env, timeout=timeout, cancel=cancel, wrapper=wrapper, what=what, echo=echo,
               tail_chars=tail_chars, check=check) as running:
        return running.finish()


def start(command: Sequence[str] | str, *, cwd: str | os.PathLike | None = None,
          env: Mapping[str, str] | None = None, timeout: float = 300.0,
          cancel: threading.Event | None = None, wrapper: Sequence[str] = (),
          what: str = "harness", echo: Callable[[str], None] | None = None,
          tail_chars: int = TAIL_CHARS, check: bool = True) -> Running:
    """Start ``wrapper + command`` as :func:`run` does and return it running; use it as a context
    manager (``with start(...) as r: ...; res = r.finish()``): leaving the block by an exception
    before :meth:`Running.finish` kills the harness's group, so no harness outlives its caller."""
    argv, _ = argv_of(command)
    argv = [*map(str, wrapper), *argv]
    full_env = dict(os.environ)
    full_env.update({str(k): str(v) for k, v in (env or {}).items()})
    if cwd is not None and not Path(cwd).is_dir():
        raise HarnessError(f"the {what} folder {cwd} does not exist", "fix [harness] cwd in gpa.toml")
    return Running(argv, cwd, full_env, timeout, cancel, what, echo, tail_chars, check)


class Running:
    """A harness started by :func:`start`: wait for something it signals (:meth:`wait_for`), then
    for its end (:meth:`finish`, which raises as :func:`run` does)."""

    def __init__(self, argv: list[str], cwd, env: dict[str, str], timeout: float, cancel: threading.Event | None,
                 what: str, echo: Callable[[str], None] | None, tail_chars: int, check: bool) -> None:
        self.argv, self.timeout, self.cancel, self.what, self.check = argv, timeout, cancel, what, check
        self.start = time.monotonic()
        self.proc = _start(argv, cwd, env, what)
        self._out = _Tail(self.proc.stdout, tail_chars, echo)
        self._err = _Tail(self.proc.stderr, tail_chars, echo)
        self._exited = _exit_notice(self.proc)
        self._reason: str | None = None
        self._finished = False

    def __enter__(self) -> Running:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if not self._finished:
            self._close_notice()
            _kill_group(self.proc)
            self._finished = True

    def _close_notice(self) -> None:
        if self._exited is not None:
            os.close(self._exited)
            self._exited = None

    def _stop_reason(self) -> str | None:
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        if time.monotonic() - self.start > self.timeout:
            return "timeout"
        return None

    def wait_for(self, fd: int) -> bool:
        """Wait until ``fd`` is readable (True: the harness is still running, or just ended) or the
        harness exits, times out or is cancelled (False; :meth:`finish` then says which)."""
        try:
            while True:
                if self._exited is not None:
                    ready = select.select([self._exited, fd], [], [], 0.05)[0]
                    if fd in ready:
                        return True
                    if ready:
                        return False
                else:
                    if select.select([fd], [], [], 0.05)[0]:
                        return True
                    if self.proc.poll() is not None:
                        return False
                if (reason := self._stop_reason()) is not None:
                    self._reason = reason
                    return False
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def leads(self, pid: int) -> bool:
        """Whether ``pid`` is the harness's own program: the process started (or, under the runner,
        the runner's child: its parent in /proc), not one a script started, after which the script
        may start others."""
        return pid == self.proc.pid or procs.parent_pid(pid) == self.proc.pid

    def end_early(self, status: int) -> RunResult:
        """The harness's own program has said, from its exit, that it exited with ``status`` and that
        nothing of what the caller reads is left to write (done_signal.py): stop waiting for the rest
        of its teardown (the other libraries' destructors, the GPU context's), kill its group and
        return its result, that status. A crash after that word is not seen."""
        self._close_notice()
        self._finished = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        return RunResult(tuple(self.argv), status, self._out.text(), self._err.text(), time.monotonic() - self.start)

    def finish(self) -> RunResult:
        """Wait for the harness to end; its result, or :class:`HarnessError` as :func:`run` raises."""
        proc, what = self.proc, self.what
        reason = self._reason
        try:
            while reason is None:
                if _waited(proc, self._exited, 0.05):
                    break
                reason = self._stop_reason()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        finally:
            self._close_notice()
        self._finished = True
        if reason:
            _kill_group(proc)
        else:
            # the leader exited; children it left in its group must not outlive the run
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        wall = time.monotonic() - self.start
        argv = self.argv
        result = RunResult(tuple(argv), proc.returncode if proc.returncode is not None else -9,
                           self._out.text(), self._err.text(), wall)
        tail = result.output_tail
        shown = " ".join(argv) if len(" ".join(argv)) < 200 else " ".join(argv)[:200] + " ..."
        if reason == "timeout":
            raise HarnessError(f"the {what} ran longer than its {self.timeout:g} s timeout and was killed ({shown})",
                               "raise [harness] timeout in gpa.toml, or make the harness run a smaller problem",
                               output_tail=tail, returncode=result.returncode)
        if reason == "cancelled":
            raise HarnessError(f"the {what} was cancelled", "a newer run replaced it; nothing to do",
                               output_tail=tail, returncode=result.returncode)
        if result.returncode < 0:
            sig = -result.returncode
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            raise HarnessError(f"the {what} crashed with {name} ({shown})",
                               "run it by hand to reproduce; see the output tail below",
                               output_tail=tail, returncode=result.returncode)
        if self.check and result.returncode != 0:
            raise HarnessError(f"the {what} exited with code {result.returncode} ({shown})",
                               "it must exit 0; see the output tail below",
                               output_tail=tail, returncode=result.returncode)
        return result


# ---------------------------------------------------------------- "no samples" diagnosis

_PRIVILEGE_MARKERS = ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", "ERR_NVGPUCTRPERM", "INSUFFICIENT_PRIVILEGES",
                      "does not have permission to access NVIDIA GPU Performance Counters")
_NO_GPU_MARKERS = ("no CUDA-capable device", "CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice",
                   "CUDA driver version is insufficient", "cudaErrorInsufficientDriver",
                   "CUDA_ERROR_NOT_INITIALIZED", "NVIDIA driver", "ERR_NVGPU")


def profiling_admin_only() -> bool | None:
    """True when the driver restricts counters to admins (``RmProfilingAdminOnly: 1``); None if unknown."""
    try:
        text = Path("/proc/driver/nvidia/params").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("RmProfilingAdminOnly"):
            return line.split(":", 1)[1].strip() == "1"
    return None


def privileges_error(collector: str, detail: str = "") -> ProfilingError:
    return ProfilingError(
        f"the {collector} collector was refused access to the GPU performance counters"
        + (f" ({detail})" if detail else ""),
        "counters are restricted to admin users (RmProfilingAdminOnly=1): run as root, or set "
        "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reload the driver")


def no_samples_error(collector: str, output: str = "", *, kernels_filter: Sequence[str] = (),
                     kernels_seen: Sequence[str] = ()) -> ProfilingError:
    """Explain why a run produced no samples, from what the harness and the collector printed."""
    if any(m in output for m in _PRIVILEGE_MARKERS) or (profiling_admin_only() and os.geteuid() != 0):
        return privileges_error(collector)
    if any(m in output for m in _NO_GPU_MARKERS):
        return ProfilingError(f"the {collector} collector saw no GPU: the harness could not use CUDA",
                              "run on a machine with an NVIDIA GPU and driver, or set collector = \"replay\" "
                              "with a recorded bundle")
    if kernels_filter and kernels_seen:
        return ProfilingError(
            f"no kernel matched [profile] kernels = {list(kernels_filter)}; the harness launched: "
            + ", ".join(sorted(set(kernels_seen))[:10]),
            "fix [profile] kernels in gpa.toml (substrings of kernel names), or leave it empty for all")
    if not kernels_seen:
        return ProfilingError(f"the {collector} collector saw no kernel launch",
                              "check that the harness launches GPU kernels (and does not fall back to the CPU)")
    return ProfilingError(f"the {collector} collector recorded no PC samples",
                          "kernels may be too short to sample: run more work, or lower "
                          "[profile] sampling_period (CUPTI)")
