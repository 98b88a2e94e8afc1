"""The injection library's side of the done signal (GPA_CUPTI_DONE, done_signal.py), without a GPU.

The real library is built and loaded into a process with a stand-in libcupti.so.13 whose every
function returns CUPTI_SUCCESS (so InitializeInjection subscribes and registers its exit handler
as it does under the driver, with no context ever created); the process then exits as a harness
does. What is checked is what the collector relies on: the word comes after END is flushed and
names the bytes through it, the destructor's timing mark is the only record after it, and the
library never waits on a FIFO nobody reads.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpa_lsp.profile.cupti import builder, done_signal

CHILD = """\
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
assert lib.InitializeInjection() == 1
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm (binutils) is needed to list the library's CUPTI imports")
    tmp = tmp_path_factory.mktemp("inject")
    cupti = builder.find_cupti()
    cc = builder.find_cc()
    so = tmp / "libgpa_inject.so"
    proc = subprocess.run(builder.compile_argv(cc, cupti, so), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    undefined = subprocess.run([nm, "-D", "-u", str(so)], capture_output=True, text=True).stdout
    names = sorted(set(re.findall(r"\b(cupti\w+)", undefined)))
    assert "cuptiSubscribe" in names and "cuptiActivityFlushAll" in names
    stub = tmp / "stub"
    stub.mkdir()
    (stub / "cupti_stub.c").write_text("".join(f"int {n}(void) {{ return 0; }}\n" for n in names))
    proc = subprocess.run([cc, "-shared", "-fPIC", "-o", str(stub / "libcupti.so.13"), "-Wl,-soname,libcupti.so.13",
                           str(stub / "cupti_stub.c")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # linked again against the stand-in: the library's rpath names the CUPTI it was linked with
    proc = subprocess.run(builder.compile_argv(cc, dataclasses.replace(cupti, library=stub / "libcupti.so.13"), so),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return so, stub


def _run(built, out: Path, child: str = CHILD, **env) -> subprocess.CompletedProcess:
    so, stub = built
    full = {k: v for k, v in os.environ.items() if not k.startswith("GPA_CUPTI_")}
    full.update({"GPA_CUPTI_OUT": str(out), "LD_LIBRARY_PATH": str(stub), **env})
    # the timeout only keeps a hang from stopping the suite: the library must not wait on the FIFO
    return subprocess.run([sys.executable, "-c", child, str(so)], env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("code", [0, 5])
def test_the_word_from_the_exit_carries_the_status_passed_to_exit(built, tmp_path, code):
    """END written by the process's exit (on_exit): the word's third field is the status the
    process exited with, which its parent's wait sees too."""
    sig = done_signal.DoneSignal(tmp_path)
    try:
        proc = _run(built, tmp_path, CHILD + f"sys.exit({code})\n", **sig.env())
        word = sig.word()
    finally:
        sig.close()
    assert proc.returncode == code, proc.stderr
    assert word is not None and word[2] == code and word[0] > 0
    assert (tmp_path / "cupti.txt").read_bytes()[:word[1]].endswith(b"\nEND\n")


def test_the_word_names_the_bytes_through_end_and_only_the_fini_mark_follows(built, tmp_path):
    sig = done_signal.DoneSignal(tmp_path)
    try:
        proc = _run(built, tmp_path, GPA_CUPTI_TIMING="1", **sig.env())
        assert proc.returncode == 0, proc.stderr
        end = sig.flushed_bytes()
    finally:
        sig.close()
    text = (tmp_path / "cupti.txt").read_bytes()
    assert end is not None and text[:end].endswith(b"\nEND\n") and text.startswith(b"V 2 ")
    prefix = done_signal.flushed_text(tmp_path, end)
    assert prefix == text[:end]
    after = done_signal.unchanged(tmp_path, prefix)
    assert after is not None and [label for label, _ in after] == ["fini"]


def test_no_reader_no_wait_and_no_setting_no_word(built, tmp_path):
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)                                     # nobody opens it for reading
    proc = _run(built, tmp_path, GPA_CUPTI_DONE=str(fifo))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cupti.txt").read_bytes().endswith(b"END\n")

    other = tmp_path / "other"
    other.mkdir()
    sig = done_signal.DoneSignal(other)
    try:
        proc = _run(built, other)                      # GPA_CUPTI_DONE not given
        assert proc.returncode == 0, proc.stderr
        assert sig.flushed_bytes() is None
    finally:
        sig.close()
    assert (other / "cupti.txt").read_bytes().endswith(b"END\n")
