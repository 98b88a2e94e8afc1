"""Whether test processes still run (Linux /proc): shared by the lifecycle, worker and runner tests."""

from __future__ import annotations

import time


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie has ended; only its reaping is left)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pids, timeout: float = 5) -> bool:
    """Wait up to ``timeout`` seconds for every pid to end; whether they all did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(alive(p) for p in pids)
