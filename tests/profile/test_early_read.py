"""The sampling run's output read while the sampled process is still ending (issue 17).

The injection library writes ``<pid> <bytes through END>`` to the FIFO named by GPA_CUPTI_DONE once
its last record is flushed (done_signal.py); the collector then reads the samples, takes the unit
throughput from the cache and stages the bundle before the harness has exited, and still waits for
the exit. Stand-in harnesses replay probe's output recorded on the H100 (``fixtures/probe.cupti.txt.gz``
and its cubin) and signal as the library does; what they do after the signal is the case under
test. The C side is checked against a stand-in libcupti (no GPU here): tests/profile/test_done_signal_library.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpa_lsp.config import Config, HarnessConfig, ProfileConfig
from gpa_lsp.errors import HarnessError
from gpa_lsp.profile import harness
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import collect_cupti
from gpa_lsp.profile.cupti import done_signal

FIX = Path(__file__).with_name("fixtures")
SAMPLES = 556_533

HARNESS = """\
import gzip, os, pathlib, signal, sys, time
out = pathlib.Path(os.environ['GPA_CUPTI_OUT'])
bundle_dir = pathlib.Path({bundle_dir!r})
log = pathlib.Path({log!r})
(out / 'cubin_0000000093e6bbf9.cubin').write_bytes(pathlib.Path({cubin!r}).read_bytes())
text = gzip.decompress(pathlib.Path({txt!r}).read_bytes()).decode()
f = open(out / 'cupti.txt', 'w')
f.write(text)
f.flush()
done = os.environ.get('GPA_CUPTI_DONE')
if {signal!r} and done:
    fd = os.open(done, os.O_WRONLY | os.O_NONBLOCK)
    status = {status!r}
    os.write(fd, (f'{{os.getpid()}} {{f.tell()}}' + (f' {{status}}' if status is not None else '') + '\\n').encode())
    os.close(fd)
    # the process is still ending: has the collector staged the bundle meanwhile? (bounded wait)
    deadline = time.monotonic() + 30
    while not list(bundle_dir.glob('*.tmp')) and time.monotonic() < deadline:
        time.sleep(0.01)
    staged = bool(list(bundle_dir.glob('*.tmp')))
else:
    staged = None
with open(log, 'a') as g:
    g.write(f'{{staged}}\\n')
after = {after!r}
if after == 'fini':
    f.write('Z fini 555000000\\n')       # the library's destructor mark, the one record after END
    f.flush()
elif after == 'rewrite':             # a second CUDA process of the harness: cupti.txt written again
    f.close()
    (out / 'cupti.txt').write_text(text.replace('T 1 {samples} 0 0 0', 'T 1 500000 0 0 0'))
elif after == 'exit3':
    sys.exit(3)
elif after == 'crash':
    os.kill(os.getpid(), signal.SIGSEGV)
elif after == 'hang':                # a teardown that does not end (the GPU context's, say)
    time.sleep(60)
"""


def _config(tmp_path, after: str, *, signal: bool = True, throughput: bool = False, status: int | None = None,
            timeout: float = 300.0) -> Config:
    from gpa_lsp.profile.bundle import read_bundle as rb
    b = rb(FIX / "probe.cupti.gpabundle")
    (cubin,) = {k.cubin for k in b.profile.kernels}
    (tmp_path / "probe.cubin").write_bytes(b.cubins[cubin])
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "harness.py").write_text(HARNESS.format(
        bundle_dir=str(tmp_path / "out"), log=str(tmp_path / "staged.log"), cubin=str(tmp_path / "probe.cubin"),
        txt=str(FIX / "probe.cupti.txt.gz"), signal=signal, after=after, samples=SAMPLES, status=status))
    return Config(root=str(tmp_path), harness=HarnessConfig(command=(sys.executable, str(tmp_path / "harness.py")),
                                                            timeout=timeout),
                  profile=ProfileConfig(throughput=throughput, min_samples=0))


def _staged(tmp_path) -> list[str]:
    return (tmp_path / "staged.log").read_text().split()


def test_the_bundle_is_staged_while_the_harness_is_still_ending(tmp_path, monkeypatch):
    """The harness waits, after its signal, for the staged bundle to appear before it exits: it
    appears (the collector did not wait for the exit), and the bundle is the one a run without
    the signal writes; the destructor's mark after END is kept, not taken for a changed output."""
    monkeypatch.setenv("GPA_CUPTI_HW_BYTES", str(128 << 20))    # both runs the same buffer
    logs: list[str] = []
    got = collect_cupti(_config(tmp_path, "fini"), tmp_path / "out" / "a.gpabundle", log=logs.append)
    assert _staged(tmp_path) == ["True"]
    assert got.profile.total_samples == SAMPLES
    assert not list((tmp_path / "out").glob("*.tmp"))
    assert not any("changed after" in m for m in logs)

    plain = collect_cupti(_config(tmp_path, "none", signal=False), tmp_path / "out" / "b.gpabundle", log=lambda m: None)
    assert _staged(tmp_path) == ["True", "None"]
    a, b = read_bundle(tmp_path / "out" / "a.gpabundle"), read_bundle(tmp_path / "out" / "b.gpabundle")
    assert a.profile == b.profile == plain.profile and a.cubins == b.cubins
    drop = ("created", "harness_wall_s")
    assert {k: v for k, v in a.manifest.items() if k not in drop} == {k: v for k, v in b.manifest.items() if k not in drop}


def test_the_fini_mark_after_end_reaches_the_timing_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("GPA_PROFILE_TIMING", "1")
    logs: list[str] = []
    collect_cupti(_config(tmp_path, "fini"), tmp_path / "out" / "a.gpabundle", log=logs.append)
    assert _staged(tmp_path) == ["True"]
    assert any(m.startswith("timing: cupti fini at 0.555 s") for m in logs)
    assert any(m.startswith("timing: sampling output flushed") for m in logs)


@pytest.mark.parametrize("after, message", [("exit3", "exited with code 3"), ("crash", "crashed with SIGSEGV")])
def test_a_harness_that_fails_after_the_flush_fails_the_collection(tmp_path, after, message):
    """The samples were read and the bundle staged, then the harness failed: the collection fails
    as before, the staged bundle is removed and the bundle there before is left as it was."""
    out = tmp_path / "out" / "a.gpabundle"
    collect_cupti(_config(tmp_path, "none"), out, log=lambda m: None)
    before = out.read_bytes()
    with pytest.raises(HarnessError, match=message):
        collect_cupti(_config(tmp_path, after), out, log=lambda m: None)
    assert _staged(tmp_path) == ["True", "True"]
    assert out.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.gpabundle"]


def test_output_rewritten_after_the_signal_is_read_again(tmp_path):
    """A second CUDA process of the harness writes cupti.txt again after the first one's END: the
    early reading is dropped and the bundle holds what the file holds at the harness's end."""
    logs: list[str] = []
    got = collect_cupti(_config(tmp_path, "rewrite"), tmp_path / "out" / "a.gpabundle", log=logs.append)
    assert _staged(tmp_path) == ["True"]
    assert got.profile.total_samples == 500_000
    assert read_bundle(tmp_path / "out" / "a.gpabundle").profile.total_samples == 500_000
    assert any("changed after its END record" in m for m in logs)
    assert not list((tmp_path / "out").glob("*.tmp"))


def _throughput_config(tmp_path) -> Config:
    cfg = _config(tmp_path, "none", throughput=True)
    return Config(root=cfg.root, harness=cfg.harness, profile=ProfileConfig(throughput=True, min_samples=0,
                                                                            throughput_collector="cupti"))


def test_the_cached_unit_throughput_is_taken_early(tmp_path, monkeypatch):
    """With the throughput pass on and every sampled kernel in the throughput cache, the early
    preparation takes it (cache_only) and stages the bundle while the harness ends; nothing asks
    for a counters run."""
    import gpa_lsp.profile.collect as collect_mod
    calls: list[bool] = []

    def cupti(*a, cache_only=False, **k):
        calls.append(cache_only)
        return (a[1], None) if cache_only else pytest.fail("a counters run was asked for")
    monkeypatch.setattr(collect_mod, "_throughput_cupti", cupti)
    collect_cupti(_throughput_config(tmp_path), tmp_path / "out" / "a.gpabundle", log=lambda m: None)
    assert _staged(tmp_path) == ["True"] and calls == [True]
    assert read_bundle(tmp_path / "out" / "a.gpabundle").manifest["throughput"]["collector"] == "cupti"


def test_a_counters_run_waits_for_the_harness_to_end(tmp_path, monkeypatch):
    """With the throughput pass on and nothing in the cache, the early preparation gives way (the
    counters run needs the harness again, after this one's end): the bundle is staged only after
    the exit, and the harness's bounded wait for it runs out."""
    import gpa_lsp.profile.collect as collect_mod
    monkeypatch.setattr(collect_mod, "_throughput_cupti",
                        lambda *a, cache_only=False, **k: None if cache_only else (a[1], "measured elsewhere"))
    cfg = _throughput_config(tmp_path)
    harness_py = tmp_path / "harness.py"
    harness_py.write_text(harness_py.read_text().replace("time.monotonic() + 30", "time.monotonic() + 0.5"))
    got = collect_cupti(cfg, tmp_path / "out" / "a.gpabundle", log=lambda m: None)
    assert _staged(tmp_path) == ["False"]
    assert "measured elsewhere" in got.notes
    assert read_bundle(tmp_path / "out" / "a.gpabundle").manifest["throughput"]["note"] == "measured elsewhere"


def test_wait_for_ends_at_the_signal_or_at_the_exit(tmp_path):
    sig = done_signal.DoneSignal(tmp_path)
    try:
        code = ("import os, sys, time; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK); "
                "os.write(fd, b'1 4\\n'); os.close(fd); time.sleep(0.3)")
        with harness.start([sys.executable, "-c", code, sig.path], timeout=30) as running:
            assert running.wait_for(sig.fd) is True
            assert running.proc.poll() is None          # still running: it sleeps after the word
            assert sig.flushed_bytes() == 4
            assert running.finish().returncode == 0
        with harness.start([sys.executable, "-c", "pass"], timeout=30) as running:
            assert running.wait_for(sig.fd) is False    # exited without a word
            running.finish()
    finally:
        sig.close()


def test_leaving_the_block_early_kills_the_harness(tmp_path):
    with pytest.raises(RuntimeError):
        with harness.start([sys.executable, "-c", "import time; time.sleep(60)"], timeout=120) as running:
            proc = running.proc
            raise RuntimeError("the caller failed")
    assert proc.poll() is not None


def test_unchanged_accepts_only_marks_after_the_prefix(tmp_path):
    prefix = b"V 2 1 12\nEND\n"
    (tmp_path / "cupti.txt").write_bytes(prefix + b"Z fini 12\n")
    assert done_signal.unchanged(tmp_path, prefix) == [("fini", 12)]
    assert done_signal.flushed_text(tmp_path, len(prefix)) == prefix
    assert done_signal.flushed_text(tmp_path, len(prefix) - 1) is None     # not through END
    (tmp_path / "cupti.txt").write_bytes(prefix + b"P 1 0 0 f 1:1\n")
    assert done_signal.unchanged(tmp_path, prefix) is None
    (tmp_path / "cupti.txt").write_bytes(b"V 2 1 13\nEND\n")
    assert done_signal.unchanged(tmp_path, prefix) is None


def test_a_word_with_the_exit_status_ends_the_wait(tmp_path):
    """The harness's own program said from its exit that it exited 0, its output complete, then its
    teardown does not end: the collection does not wait for it (it would run into the 20 s
    timeout), writes the bundle the run without the word writes, and leaves no process behind."""
    got = collect_cupti(_config(tmp_path, "hang", status=0, timeout=20), tmp_path / "out" / "a.gpabundle",
                        log=lambda m: None)
    assert got.profile.total_samples == SAMPLES
    assert read_bundle(tmp_path / "out" / "a.gpabundle").profile.total_samples == SAMPLES
    assert not list((tmp_path / "out").glob("*.tmp"))
    assert not _running(tmp_path / "harness.py")


def _running(script: Path) -> list[int]:
    """Processes (not zombies) whose command line names ``script``, after a bounded wait for a
    killed one to be gone (a SIGKILL takes effect asynchronously)."""
    import time
    deadline = time.monotonic() + 5
    while True:
        found = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                if str(script).encode() in (d / "cmdline").read_bytes() and \
                        (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(d.name))
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_a_word_with_a_failing_status_still_waits(tmp_path):
    """Status 3 in the word: the exit is waited for and the collection fails as before."""
    with pytest.raises(HarnessError, match="exited with code 3"):
        collect_cupti(_config(tmp_path, "exit3", status=3), tmp_path / "out" / "a.gpabundle", log=lambda m: None)


def test_a_word_from_a_program_a_script_started_still_waits(tmp_path):
    """The word comes from a program the harness's script started (not the harness's own program):
    the script may start another, so its end is waited for; here it then fails."""
    cfg = _config(tmp_path, "none", status=0)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text("import subprocess, sys\n"
                       f"subprocess.run([sys.executable, {str(tmp_path / 'harness.py')!r}], check=True)\n"
                       "sys.exit(4)\n")
    cfg = Config(root=cfg.root, harness=HarnessConfig(command=(sys.executable, str(wrapper))), profile=cfg.profile)
    with pytest.raises(HarnessError, match="exited with code 4"):
        collect_cupti(cfg, tmp_path / "out" / "a.gpabundle", log=lambda m: None)
    assert _staged(tmp_path) == ["True"]
