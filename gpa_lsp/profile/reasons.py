"""Stall reason names: every collector's spelling -> one name -> a GPA category.

CUPTI reports ``smsp__pcsamp_warps_issue_stalled_<reason>[_not_issued]`` and
Nsight Compute ``stall_<short>[ (Not Issued)]`` with shorter, partly different
names (``stall_long_sb``, ``stall_math``, ``stall_sleep``). Both are folded to
the names of :mod:`gpa_lsp.profile.model` so the rest of the tool never sees a
collector's spelling. Standard library only: this runs on the GPU machine.
"""

from __future__ import annotations

import re

REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
    "warpgroup_arrive",
)

CATEGORIES = (
    "memory_dependency", "execution_dependency", "synchronization", "instruction_fetch",
    "memory_throttle", "pipe_busy", "constant_memory", "not_selected", "active", "other",
)

# gpa-method.md, "Stall reasons: Hopper/Ampere names -> GPA categories"
_CATEGORY = {
    "long_scoreboard": "memory_dependency",
    "short_scoreboard": "execution_dependency",
    "wait": "execution_dependency",
    "barrier": "synchronization",
    "membar": "synchronization",
    "warpgroup_arrive": "synchronization",
    "no_instructions": "instruction_fetch",
    "branch_resolving": "instruction_fetch",
    "lg_throttle": "memory_throttle",
    "drain": "memory_throttle",
    "tex_throttle": "memory_throttle",
    "math_pipe_throttle": "pipe_busy",
    "mio_throttle": "pipe_busy",
    "dispatch_stall": "pipe_busy",
    "imc_miss": "constant_memory",
    "not_selected": "not_selected",
    "selected": "active",
    "misc": "other",
    "sleeping": "other",
}

# Nsight Compute's short names (and a few older CUPTI / nvprof spellings).
_ALIASES = {
    "long_sb": "long_scoreboard",
    "short_sb": "short_scoreboard",
    "math": "math_pipe_throttle",
    "math_pipe": "math_pipe_throttle",
    "mio": "mio_throttle",
    "lg": "lg_throttle",
    "tex": "tex_throttle",
    "imc": "imc_miss",
    "no_inst": "no_instructions",
    "no_instruction": "no_instructions",
    "dispatch": "dispatch_stall",
    "sleep": "sleeping",
    "gmma": "warpgroup_arrive",
    "warpgroup": "warpgroup_arrive",
    "branch": "branch_resolving",
    "memory_dependency": "long_scoreboard",
    "execution_dependency": "short_scoreboard",
    "synchronization": "barrier",
    "inst_fetch": "no_instructions",
    "memory_throttle": "lg_throttle",
    "pipe_busy": "math_pipe_throttle",
    "constant_memory_dependency": "imc_miss",
    "other": "misc",
}

_CUPTI = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(?P<r>[a-z_]+?)(?P<ni>_not_issued)?$")
_NCU = re.compile(r"^stall_(?P<r>[a-z_]+?)(?P<ni>\s*\(not issued\))?$")


def parse(raw: str) -> tuple[str, bool] | None:
    """``(reason, not_issued)`` for a raw counter / column name, or None when it names no stall reason.

    ``smsp__pcsamp_sample_count`` and ``smsp__pcsamp_samples_data_dropped`` are totals,
    not reasons, and give None.
    """
    text = raw.strip().lower()
    m = _CUPTI.match(text) or _NCU.match(text)
    if m:
        name, not_issued = m.group("r"), bool(m.group("ni"))
    else:
        name, not_issued = text, False
        if name.endswith("(not issued)"):
            name, not_issued = name[: -len("(not issued)")].strip(), True
        elif name.endswith("_not_issued"):
            name, not_issued = name[: -len("_not_issued")], True
        name = name.removeprefix("stall_")
    name = _ALIASES.get(name, name)
    return (name, not_issued) if name in _CATEGORY else None


def normalize(raw: str) -> str | None:
    """The model's name for a raw reason (issued or not), or None if it is no stall reason."""
    got = parse(raw)
    return got[0] if got else None


def category(reason: str) -> str:
    """GPA category of a reason (a model name or any raw spelling); unknown reasons are ``other``."""
    name = reason if reason in _CATEGORY else normalize(reason)
    return _CATEGORY.get(name or "", "other")
