"""The injection library's word that its output is complete, while the harness is still ending.

Why: on the H100 a sampled process takes about 0.15 s to end after the library's last record (the
other libraries' destructors, then the GPU context's teardown; benchmarks/profiling/README.md),
and reading the samples, the cached unit throughput and the bundle's compression do not need the
process gone. So the sampling run gives the library a FIFO (``GPA_CUPTI_DONE``); once END is
written and flushed the library writes ``<pid> <bytes of cupti.txt through END>`` to it, and the
collector reads that much of the output while the process exits (profile/collect.py).

What the word does not promise, and how the collector stays right anyway: the harness's exit
status is still waited for (a harness that fails after the flush fails the collection as
before), and the output is checked again after the exit (:func:`unchanged`): a second CUDA
process of the same harness rewrites ``cupti.txt``, so anything but the records that may follow
END (the library's ``Z fini`` timing mark) means the output read early is dropped and read again.

Except in one case, where the wait buys nothing: the library writes END from the process's exit
(an ``on_exit`` handler) and adds the status the process passed to ``exit()`` as a third field.
When that status is 0 and the process is the harness's own program (the one gpa started, or the
runner's child: not a program a script started, after which the script may start another), nothing
the collector reads is left to come, and the rest of the exit is the other libraries' destructors
and the GPU context's teardown (0.13 s after END on the H200's probe, 0.09 s of it after the bundle
is staged): the collector kills the group and keeps the status (``harness.Running.end_early``). A
crash in that teardown is then not seen; a failing status, or a word without one, is waited for as
before.

A FIFO, not a pipe handed down as a descriptor: the harness may be a shell or a script that
starts the CUDA program, and the runner (gpa_lsp/procs.py) closes inherited descriptors; a path
in the environment reaches the library wherever the environment does. The library opens it
non-blocking, so a process that outlives the collector's reading never waits on it. Standard
library only: this runs on the GPU machine.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import OUTPUT

ENV = "GPA_CUPTI_DONE"
NAME = "done.fifo"
MAX_WORD = 4096


class DoneSignal:
    """A FIFO in the run's output folder, open for reading (non-blocking) while the harness runs.

    Also held open for writing by the collector itself, so the FIFO never reads as ended (a writer
    that came and went without a word would otherwise make it readable at every wait)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = str(Path(folder) / NAME)
        os.mkfifo(self.path, 0o600)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            self._writer = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            os.close(self.fd)
            raise
        self._got = b""

    @classmethod
    def open_in(cls, folder: str | os.PathLike) -> DoneSignal | None:
        """The signal for a run writing to ``folder``; None where no FIFO can be made there."""
        try:
            return cls(folder)
        except (OSError, AttributeError):     # no mkfifo (not POSIX), or a file system without FIFOs
            return None

    def env(self) -> dict[str, str]:
        return {ENV: self.path}

    def word(self) -> tuple[int, int, int | None] | None:
        """(pid, bytes of ``cupti.txt`` through END, the exit status or None) from the first word
        the library wrote; None if no complete word has come (call once the descriptor is readable).
        The status is there when END was written by the process's exit: what it passed to exit()."""
        try:
            while len(self._got) < MAX_WORD and (chunk := os.read(self.fd, MAX_WORD)):
                self._got += chunk
        except BlockingIOError:
            pass
        except OSError:
            return None
        line, sep, _ = self._got.partition(b"\n")
        if not sep:
            return None
        try:
            fields = [int(x) for x in line.split()]
        except ValueError:
            return None
        if len(fields) not in (2, 3) or fields[1] <= 0:
            return None
        return fields[0], fields[1], (fields[2] if len(fields) == 3 else None)

    def flushed_bytes(self) -> int | None:
        """Bytes of ``cupti.txt`` through END (``word``); None without a complete word."""
        w = self.word()
        return w[1] if w is not None else None

    def close(self) -> None:
        for fd in (self.fd, self._writer):
            try:
                os.close(fd)
            except OSError:
                pass


def flushed_text(folder: str | os.PathLike, end: int) -> bytes | None:
    """The first ``end`` bytes of the output, when they end with the END record; else None."""
    try:
        with open(Path(folder) / OUTPUT, "rb") as f:
            data = f.read(end)
    except OSError:
        return None
    if len(data) != end or not (data == b"END\n" or data.endswith(b"\nEND\n")):
        return None
    return data


def unchanged(folder: str | os.PathLike, prefix: bytes) -> list[tuple[str, int]] | None:
    """After the harness's exit: the Z marks written after END when the output still starts with
    ``prefix`` (what was read early) and holds nothing else after it; None when it changed (the
    early reading is then dropped)."""
    try:
        data = (Path(folder) / OUTPUT).read_bytes()
    except OSError:
        return None
    if not data.startswith(prefix):
        return None
    marks: list[tuple[str, int]] = []
    for line in data[len(prefix):].decode("utf-8", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "Z":
            return None
        try:
            marks.append((parts[1], int(parts[2])))
        except ValueError:
            return None
    return marks
