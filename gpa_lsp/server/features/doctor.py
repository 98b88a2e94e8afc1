"""`gpa doctor` in the editor (issue 18): when this machine lacks what a folder is set up to do, the
editor says which checks fail and what to do, once per folder (``window/showMessage``), and the
command ``gpa.doctor`` returns every check.

The checks are `gpa doctor`'s own: ``python -m gpa_lsp.commands.doctor --json`` run once per server
in a child process (it loads the NVIDIA driver library and calls ``cuInit``, which the server
process is better without). What a folder needs: ``advise`` always (a recorded bundle is analysed);
when trusted and configured to profile, ``build`` (it has sources or a build command) and
``profile_<collector>``. A machine without a GPU that only shows recorded bundles (an untrusted
folder, ``collector = "replay"``) lacks nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types

from ... import procs
from ...commands.doctor import LABELS, MISSING, NA, NEEDS, OK, WARN
from ..folder import Folder
from ..protocol import DoctorCheck, DoctorResult, result

log = logging.getLogger("gpa_lsp.server")
DOCTOR_TIMEOUT_S = 120.0        # nvcc, nvdisasm, cuobjdump and ncu --version, and the driver


def doctor_argv() -> list[str]:
    return [sys.executable, "-m", "gpa_lsp.commands.doctor", "--json"]


def doctor_env() -> dict[str, str]:
    """The server's environment, with the gpa_lsp it runs from first on the path (the VS Code
    extension's bundled copy is on ``sys.path`` only)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


def run_doctor() -> dict[str, Any]:
    """`gpa doctor --json`'s answer: ``{"checks": [...], "ready": {...}}``; an ``error`` when it failed."""
    try:
        proc = procs.run_tool(doctor_argv(), timeout=DOCTOR_TIMEOUT_S, env=doctor_env())
        data = json.loads(proc.stdout)
        if not isinstance(data, dict) or not isinstance(data.get("checks"), list):
            raise ValueError("not a report of checks")
        return data
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        log.warning("gpa doctor failed: %r", exc)
        return {"checks": [], "ready": {}, "error": f"gpa doctor could not run: {type(exc).__name__}: {exc}"}


def folder_needs(collector: str, *, trusted: bool, configured: bool, builds: bool) -> tuple[str, ...]:
    """What a folder asks of this machine, as `gpa doctor`'s readiness keys (``NEEDS``)."""
    needs = ["advise"]
    if trusted and configured and collector in ("cupti", "ncu"):
        if builds:
            needs.append("build")
        needs.append(f"profile_{collector}")
    return tuple(needs)


def failing(checks: Sequence[dict[str, Any]], needs: Sequence[str]) -> list[dict[str, Any]]:
    """The checks that stop one of ``needs``, in `gpa doctor`'s order: those missing (a warning
    stops nothing; ``n/a`` follows from another, e.g. no counters without a GPU)."""
    names = {n for need in needs for n in NEEDS.get(need, ())}
    return [c for c in checks if c.get("name") in names and c.get("status") not in (OK, WARN, NA)]


def check_lines(checks: Sequence[dict[str, Any]]) -> list[str]:
    """One line per failing check: its name, what is wrong and what to do."""
    out = []
    for c in checks:
        line = f"{c.get('name')}: {c.get('detail', '')}"
        if c.get("fix"):
            line += f" -> {c['fix']}"
        out.append(line)
    return out


def folder_message(folder_name: str, needs: Sequence[str], checks: Sequence[dict[str, Any]],
                   has_bundle: bool) -> tuple[types.MessageType, str] | None:
    """The message for a folder whose needs this machine does not meet; None when it meets them."""
    bad = failing(checks, needs)
    if not bad:
        return None
    names = {c.get("name") for c in bad}
    stopped = [n for n in needs if names & set(NEEDS.get(n, ()))]
    what = ", ".join(LABELS[n].split(" (")[0] for n in stopped)
    if "advise" in stopped:
        kind, head = types.MessageType.Error, f"gpa: {folder_name}: this machine cannot run {what}"
    else:
        after = ("; saving shows the recorded bundle instead" if has_bundle else "")
        kind, head = types.MessageType.Warning, f"gpa: {folder_name}: this machine cannot run {what}{after}"
    text = head + ". gpa doctor says:\n" + "\n".join("- " + line for line in check_lines(bad))
    return kind, text + "\n(all checks: the command GPA: Doctor, or `gpa doctor` in a terminal)"


def doctor_markdown(data: dict[str, Any]) -> str:
    """Every check as markdown (the ``gpa.doctor`` command's ``markdown``)."""
    if data.get("error"):
        return f"# gpa doctor\n\n{data['error']}\n"
    out = ["# gpa doctor", "", "| check | status | found | what to do |", "|---|---|---|---|"]
    for c in data.get("checks", []):
        cells = [str(c.get(k, "")).replace("|", "\\|") for k in ("name", "status", "detail", "fix")]
        if c.get("status") == OK:
            cells[3] = ""
        out.append("| " + " | ".join(cells) + " |")
    ready = data.get("ready", {})
    if ready:
        out += ["", "| command | here |", "|---|---|"]
        out += [f"| {LABELS.get(k, k)} | {'ready' if ok else 'not possible'} |" for k, ok in ready.items()]
    return "\n".join(out) + "\n"


def doctor_result(data: dict[str, Any]) -> DoctorResult:
    """`gpa doctor --json`'s answer as the ``gpa.doctor`` command's result."""
    checks = tuple(DoctorCheck(str(c.get("name", "")), c.get("status", MISSING), str(c.get("detail", "")),
                               str(c.get("fix", "")), tuple(c.get("needed_for", ()))) for c in data.get("checks", []))
    ready = {str(k): bool(v) for k, v in (data.get("ready") or {}).items()}
    return DoctorResult(checks, ready, doctor_markdown(data), data.get("error"))


# ---------------------------------------------------------------- the server side

async def checks_of(ls) -> dict[str, Any]:
    """`gpa doctor`'s checks for this machine, run once per server (off the event loop)."""
    if ls.doctor is None:
        ls.doctor = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(ls.executor, run_doctor))
    return await asyncio.shield(ls.doctor)


async def tell_folder(ls, folder: Folder) -> None:
    """Show the failing checks that stop what ``folder`` is set up to do (once per folder and set of needs)."""
    data = await checks_of(ls)
    if not ls.is_open(folder):
        return
    c = folder.config
    needs = folder_needs(c.profile.collector, trusted=folder.trusted, configured=folder.configured,
                         builds=bool(c.build.sources or c.build.command))
    msg = folder_message(folder.root.name, needs, data.get("checks", []), bool(c.bundle_path))
    if msg is not None:
        ls.tell_once(folder, "doctor:" + ",".join(needs), *msg)


def register(ls) -> None:
    @ls.command("gpa.doctor")
    async def cmd_doctor(ls, *args: Any) -> dict[str, Any]:
        return result(doctor_result(await checks_of(ls)))
