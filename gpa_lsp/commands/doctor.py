"""`gpa doctor [--json]`: what gpa needs on this machine, what is there, and what to do about the rest.

Checks nvcc, nvdisasm, cuobjdump, ncu, CUPTI (and the C compiler its injection library needs),
the NVIDIA driver, the GPU and access to its performance counters. Exit code 0 when `gpa advise`
(replaying a recorded bundle) works here, 1 when it does not; what profiling needs is reported,
not required (most machines that read advice have no GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from .. import procs, toolchain
from ..errors import ToolNotFound
from ..install import pip_extra
from ..profile import device, gpu_check, harness  # called through the modules: tests replace their functions
from ..profile.cupti import builder

OK, MISSING, WARN, NA = "ok", "missing", "warning", "n/a"

# what each gpa command needs, by check name
NEEDS = {
    "advise": ("python", "nvdisasm"),
    "disasm": ("python", "nvdisasm", "cuobjdump"),
    "build": ("nvcc",),
    "profile_cupti": ("nvcc", "cupti", "c compiler", "driver", "gpu", "counters"),
    "profile_ncu": ("nvcc", "cuobjdump", "ncu", "driver", "gpu", "counters"),
}
LABELS = {"advise": "gpa advise (replay a recorded bundle)", "disasm": "gpa disasm (an executable)",
          "build": "building .cu sources (nvcc)", "profile_cupti": "gpa profile --collector cupti",
          "profile_ncu": "gpa profile --collector ncu"}


@dataclass
class Check:
    name: str
    status: str              # ok | missing | warning | n/a
    detail: str              # what was found (a path and version), or what is wrong
    fix: str = ""            # what to do, when not ok
    needed_for: list[str] = field(default_factory=list)


VERSION_TIMEOUT_S = 20.0


def _version(argv: list[str], pattern: str) -> str:
    """The tool's version from ``argv``'s output ("" when it fails or takes too long). Run in its own
    process group, killed whole on timeout (``procs.run_tool``): a wrapper script (a hung or
    spinning nvdisasm) leaves no child behind; ``subprocess.run`` killed only the script."""
    try:
        out = procs.run_tool(argv, timeout=VERSION_TIMEOUT_S).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(pattern, out)
    return m.group(1) if m else ""


def _tool(name: str, version_pattern: str, explicit: str | None = None) -> Check:
    try:
        path = toolchain.find_tool(name, explicit)
    except ToolNotFound as exc:
        return Check(name, MISSING, exc.message, exc.hint)
    v = _version([path, "--version"], version_pattern)
    return Check(name, OK, path + (f" ({v})" if v else ""))


def _python() -> Check:
    missing = []
    for mod in ("elftools", "networkx", "tree_sitter", "tree_sitter_cuda", "pygls", "lsprotocol"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    ver = f"Python {sys.version.split()[0]} ({sys.executable})"
    if missing:
        return Check("python", MISSING, f"{ver}: cannot import {', '.join(missing)}",
                     f"reinstall gpa-lsp with its dependencies: {pip_extra()}")
    return Check("python", OK, ver)


def _cupti() -> Check:
    try:
        c = builder.find_cupti()
    except ToolNotFound as exc:
        return Check("cupti", MISSING, exc.message, exc.hint)
    return Check("cupti", OK, f"{c.library} (API {c.api_version}, from the {c.origin})")


def _cc() -> Check:
    try:
        return Check("c compiler", OK, builder.find_cc() + " (builds the CUPTI injection library)")
    except ToolNotFound as exc:
        return Check("c compiler", MISSING, exc.message, exc.hint)


def _driver_gpu_counters() -> list[Check]:
    st = gpu_check.driver_status()
    if st.libcuda is None:
        driver = Check("driver", MISSING, "no NVIDIA driver: " + (st.load_error or "libcuda.so.1 not found"),
                       "profiling needs an NVIDIA driver (on a GPU machine); `gpa advise` and the editor's "
                       "replay of recorded bundles do not")
    elif st.init_error == "CUDA_ERROR_INSUFFICIENT_DRIVER" or st.init_error == "CUDA_ERROR_STUB_LIBRARY":
        driver = Check("driver", MISSING, st.problem or "", st.hint)
    else:
        driver = Check("driver", OK, f"{st.libcuda}" + (f" (supports CUDA {st.driver_cuda})" if st.driver_cuda else ""))
    if st.problem is None:
        dev = device.query_device()
        desc = f"{st.device_count} device(s)"
        if dev is not None:
            desc = f"{dev.name}, sm_{dev.sm}, {dev.sm_count} SMs; " + desc
        gpu = Check("gpu", OK, desc)
    else:
        dev = None
        gpu = Check("gpu", MISSING, "no NVIDIA GPU usable here: " + (st.problem or ""), st.hint)
    admin = harness.profiling_admin_only()
    if gpu.status != OK:
        counters = Check("counters", NA, "no GPU, nothing to sample")
    elif admin is None:
        counters = Check("counters", WARN, "unknown (/proc/driver/nvidia/params has no RmProfilingAdminOnly)",
                         "if profiling says ERR_NVGPUCTRPERM, see the fix for RmProfilingAdminOnly below")
    elif admin and os.geteuid() != 0:
        counters = Check("counters", MISSING, "RmProfilingAdminOnly: 1 and you are not root: "
                         "the performance counters (PC sampling) are refused",
                         "run as root, or add `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file "
                         "in /etc/modprobe.d and reload the driver (or reboot)")
    else:
        counters = Check("counters", OK, "RmProfilingAdminOnly: 1, running as root" if admin
                         else "RmProfilingAdminOnly: 0 (any user may sample)")
    return [driver, gpu, counters, _tables(dev)]


def _tables(dev) -> Check:
    """Whether the unit models' probe tables were measured on this GPU, borrowed from a probed
    device of its chip, or missing (analysis/probe_tables.py): how grounded its estimates are."""
    if dev is None:
        return Check("tables", NA, "no GPU here: each recorded bundle's device decides which probe tables apply")
    from ..analysis.probe_tables import RECORD_HINT, coverage
    note = coverage(dev)
    if note is None:
        return Check("tables", OK, f"the unit models' probe tables were measured on this device ({dev.name})")
    return Check("tables", WARN, note.replace(RECORD_HINT, "").strip(), RECORD_HINT)


def checks() -> list[Check]:
    out = [
        _python(),
        _tool("nvcc", r"release ([\d.]+)"),
        _tool("nvdisasm", r"release ([\d.]+)"),
        _tool("cuobjdump", r"release ([\d.]+)"),
        _tool("ncu", r"Version ([\d.]+)"),
        _cupti(),
        _cc(),
        *_driver_gpu_counters(),
    ]
    for c in out:
        c.needed_for = [cmd for cmd, names in NEEDS.items() if c.name in names]
    return out


def readiness(found: list[Check]) -> dict[str, bool]:
    status = {c.name: c.status for c in found}
    return {cmd: all(status.get(n) in (OK, WARN) for n in names) for cmd, names in NEEDS.items()}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("doctor", help="check the tools, driver, GPU and permissions gpa needs here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def render(found: list[Check], ready: dict[str, bool]) -> str:
    lines = ["gpa doctor: what gpa needs on this machine"]
    for c in found:
        lines.append(f"  {c.status:8s} {c.name:11s} {c.detail}")
        if c.fix and c.status != OK:
            lines.append(f"  {'':8s} {'':11s} -> {c.fix}")
        if c.status not in (OK, NA) and c.needed_for:
            lines.append(f"  {'':8s} {'':11s}    (needed for: {', '.join(LABELS[n].split(' (')[0] for n in c.needed_for)})")
    lines.append("")
    for cmd, ok in ready.items():
        lines.append(f"  {LABELS[cmd]:38s} {'ready' if ok else 'not possible here'}")
    if not ready["advise"]:
        lines.append("gpa advise cannot run here: fix the checks marked missing above")
    elif not (ready["profile_cupti"] or ready["profile_ncu"]):
        lines.append("advice from recorded bundles works here; recording a profile needs a GPU machine "
                     "(see the checks above)")
    return "\n".join(lines)


def run(args) -> int:
    found = checks()
    ready = readiness(found)
    if args.json:
        print(json.dumps({"checks": [asdict(c) for c in found], "ready": ready}, indent=2))
    else:
        print(render(found, ready))
    return 0 if ready["advise"] else 1


def main(argv: list[str] | None = None) -> int:
    """`python -m gpa_lsp.commands.doctor`: the same checks on a machine with only the standard
    library (a GPU machine that records profiles)."""
    parser = argparse.ArgumentParser(prog="gpa doctor")
    parser.add_argument("--json", action="store_true")
    return run(parser.parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
