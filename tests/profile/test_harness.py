import sys
import threading
import time

import pytest

from gpa_lsp.errors import HarnessError, ProfilingError
from gpa_lsp.profile import harness

PY = sys.executable


def test_ok_keeps_tail_and_env(tmp_path):
    prog = "import os,sys; print('x'*20000); print('END', os.environ['GPA_T']); sys.stderr.write('warn\\n')"
    res = harness.run([PY, "-c", prog], cwd=tmp_path, env={"GPA_T": "42"}, timeout=30, tail_chars=1000)
    assert res.returncode == 0
    assert res.stdout.rstrip().endswith("END 42")
    assert len(res.stdout) <= 1000
    assert "warn" in res.stderr and "--- stderr (tail) ---" in res.output_tail


def test_shell_string_is_run_by_the_shell(tmp_path):
    res = harness.run("echo one && echo two | tr a-z A-Z", cwd=tmp_path, timeout=30)
    assert res.stdout.split() == ["one", "TWO"]


def test_non_zero_exit(tmp_path):
    with pytest.raises(HarnessError) as err:
        harness.run([PY, "-c", "import sys; print('bad input'); sys.exit(3)"], cwd=tmp_path, timeout=30)
    assert "exited with code 3" in err.value.message
    assert err.value.returncode == 3 and "bad input" in err.value.output_tail


def test_crash_by_signal(tmp_path):
    with pytest.raises(HarnessError) as err:
        harness.run([PY, "-c", "import os,signal; print('about to crash', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"],
                    cwd=tmp_path, timeout=30)
    assert "crashed with SIGSEGV" in err.value.message
    assert "about to crash" in err.value.output_tail


def test_crash_of_a_c_program(tmp_path):
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "abort.c"
    src.write_text("#include <stdlib.h>\n#include <stdio.h>\nint main(){puts(\"c harness\");fflush(stdout);abort();}\n")
    subprocess.run([cc, "-o", str(tmp_path / "abort"), str(src)], check=True)
    with pytest.raises(HarnessError) as err:
        harness.run([str(tmp_path / "abort")], cwd=tmp_path, timeout=30)
    assert "SIGABRT" in err.value.message and "c harness" in err.value.output_tail


def test_timeout_kills_the_whole_group(tmp_path):
    marker = tmp_path / "child_alive"
    # the shell starts a grandchild that would write the marker after 3 s
    cmd = f"({PY} -c 'import time; time.sleep(3); open(\"{marker}\", \"w\").write(\"x\")' &) ; sleep 30"
    start = time.monotonic()
    with pytest.raises(HarnessError) as err:
        harness.run(cmd, cwd=tmp_path, timeout=0.5)
    assert time.monotonic() - start < 10
    assert "0.5 s timeout" in err.value.message and "timeout" in err.value.hint
    time.sleep(3.5)
    assert not marker.exists()


def test_cancel(tmp_path):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(HarnessError, match="cancelled"):
        harness.run([PY, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout=60, cancel=cancel)
    assert time.monotonic() - start < 10


def test_missing_program_and_folder(tmp_path):
    with pytest.raises(HarnessError, match="was not found"):
        harness.run([str(tmp_path / "nope")], cwd=tmp_path, timeout=5)
    with pytest.raises(HarnessError, match="does not exist"):
        harness.run([PY, "-c", "pass"], cwd=tmp_path / "nofolder", timeout=5)
    with pytest.raises(HarnessError, match="empty"):
        harness.run([], cwd=tmp_path, timeout=5)


def test_no_samples_explanations():
    e = harness.no_samples_error("CUPTI", "==ERROR== CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    assert isinstance(e, ProfilingError) and "refused" in e.message and "NVreg_RestrictProfilingToAdminUsers" in e.hint
    e = harness.no_samples_error("ncu", "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert "refused" in e.message
    e = harness.no_samples_error("CUPTI", "done: no CUDA-capable device is detected")
    assert "no GPU" in e.message
    e = harness.no_samples_error("CUPTI", "", kernels_filter=["stencil2"], kernels_seen=["_Z5chasev"])
    assert "stencil2" in e.message and "_Z5chasev" in e.message
    e = harness.no_samples_error("CUPTI", "", kernels_seen=[])
    assert "no kernel launch" in e.message
