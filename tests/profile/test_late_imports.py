"""`gpa profile` imports what it needs only after the harness starts while the harness runs
(gpa_lsp/profile/late_imports.py): the command's own imports leave those modules out."""

import subprocess
import sys

from gpa_lsp.profile import late_imports

PROBE = """
import sys
import gpa_lsp.commands.profile
print(",".join(m for m in {mods!r} if m in sys.modules))
from gpa_lsp.profile.late_imports import LATE
LATE.start(); LATE.wait()
print(",".join(m for m in {mods!r} if m not in sys.modules))
"""


def test_profile_command_leaves_the_late_modules_to_the_thread():
    out = subprocess.run([sys.executable, "-c", PROBE.format(mods=late_imports.MODULES)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == ["", ""], f"imported before the harness starts: {out[0]}; not imported by the thread: {out[1]}"


def test_wait_without_start_returns_and_a_failed_import_fails_where_used():
    late = late_imports.LateImports(("gpa_lsp.profile.no_such_module",))
    late.wait()                      # never started: nothing to wait for
    late.start()
    late.wait()
    assert isinstance(late.error, ModuleNotFoundError)
