"""Test hook (tests/server/test_worker.py puts this folder first on PYTHONPATH): every Python
process started with it writes the names of its imported modules to
``$GPA_TEST_MODULES_DIR/<pid>.modules`` every 0.1 s, so a test can see what the language server
and its analysis worker have imported without asking them."""

import os
import sys
import threading
import time

_DIR = os.environ.get("GPA_TEST_MODULES_DIR")


def _dump() -> None:
    path = os.path.join(_DIR, f"{os.getpid()}.modules")
    while True:
        try:
            names = "\n".join(sorted(list(sys.modules)))
            with open(path + ".tmp", "w") as f:
                f.write(names)
            os.replace(path + ".tmp", path)
        except Exception:  # noqa: BLE001 - sys.modules changed while copied, or the folder is gone
            pass
        time.sleep(0.1)


if _DIR:
    threading.Thread(target=_dump, name="gpa-test-module-dump", daemon=True).start()
