"""The editor shows `gpa doctor`'s checks when something is missing (issue 18), through the LSP.

The expected checks are `gpa doctor --json`'s, run here by the test: a trusted folder set up to
profile on a machine that cannot (no GPU here) gets one message naming each failing check and
its fix; an untrusted folder, which only replays, gets none; ``gpa.doctor`` returns the same checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from lsprotocol import types

from gpa_lsp.server.features import doctor

from .lsp_session import session, wait_for


def _cli_checks() -> dict:
    out = subprocess.run([sys.executable, "-m", "gpa_lsp.commands.doctor", "--json"], capture_output=True,
                         text=True, timeout=120)
    return json.loads(out.stdout)


CLI = None


def cli() -> dict:
    global CLI
    if CLI is None:
        CLI = _cli_checks()
    return CLI


def _workspace(tmp_path, collector: str = "cupti"):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    (root / "gpa.toml").write_text(textwrap.dedent(f"""\
        [build]
        sources = ["k.cu"]

        [harness]
        command = ["true"]

        [profile]
        collector = "{collector}"
        """))
    return root


def _doctor_messages(client) -> list[types.ShowMessageParams]:
    return [m for m in client.messages if "gpa doctor says" in m.message]


async def test_a_folder_set_up_to_profile_is_told_what_this_machine_lacks(tmp_path):
    needs = doctor.folder_needs("cupti", trusted=True, configured=True, builds=True)
    bad = doctor.failing(cli()["checks"], needs)
    if not bad:
        pytest.skip("this machine can build and profile with cupti: nothing is missing")
    root = _workspace(tmp_path)
    async with session(root, trusted=True) as client:
        (msg,) = await wait_for(lambda: _doctor_messages(client), 120, "the doctor's message")
        assert msg.type in (types.MessageType.Warning, types.MessageType.Error)
        assert msg.message.startswith("gpa: proj: this machine cannot run ")
        for c in bad:                                   # each failing check, with what to do
            assert f"- {c['name']}: {c['detail']}" in msg.message
            if c["fix"]:
                assert c["fix"] in msg.message
        ok = [c for c in cli()["checks"] if c["status"] == "ok"]
        assert not any(f"- {c['name']}: " in msg.message for c in ok)
        # the same checks behind the command
        result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="gpa.doctor"))
        got = [(c["name"], c["status"], c["fix"]) for c in result["checks"]]
        assert got == [(c["name"], c["status"], c["fix"]) for c in cli()["checks"]]
        assert result["ready"] == cli()["ready"]
        for c in cli()["checks"]:
            assert f"| {c['name']} | {c['status']} |" in result["markdown"]


async def test_an_untrusted_folder_lacks_nothing_it_does(tmp_path):
    needs = doctor.folder_needs("cupti", trusted=False, configured=True, builds=True)
    assert needs == ("advise",)
    if doctor.failing(cli()["checks"], needs):
        pytest.skip("gpa advise cannot run on this machine")
    root = _workspace(tmp_path)
    async with session(root, trusted=False) as client:
        await wait_for(lambda: any(s.get("state") == "untrusted" for s in client.status), 60, "the folder to start")
        result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="gpa.doctor"))
        assert [c["name"] for c in result["checks"]] == [c["name"] for c in cli()["checks"]]
        assert not _doctor_messages(client)             # the checks ran (above) and said nothing to this folder


def test_what_a_folder_needs():
    assert doctor.folder_needs("cupti", trusted=True, configured=True, builds=True) == \
        ("advise", "build", "profile_cupti")
    assert doctor.folder_needs("ncu", trusted=True, configured=True, builds=False) == ("advise", "profile_ncu")
    assert doctor.folder_needs("replay", trusted=True, configured=True, builds=True) == ("advise",)
    assert doctor.folder_needs("cupti", trusted=True, configured=False, builds=True) == ("advise",)


CHECKS = [
    {"name": "python", "status": "ok", "detail": "Python 3.11", "fix": ""},
    {"name": "nvdisasm", "status": "missing", "detail": "nvdisasm was not found", "fix": "pip install nvidia-cuda-nvdisasm"},
    {"name": "nvcc", "status": "ok", "detail": "/usr/bin/nvcc", "fix": ""},
    {"name": "cupti", "status": "ok", "detail": "libcupti", "fix": ""},
    {"name": "c compiler", "status": "ok", "detail": "cc", "fix": ""},
    {"name": "driver", "status": "missing", "detail": "no NVIDIA driver", "fix": "profiling needs a driver"},
    {"name": "gpu", "status": "missing", "detail": "no NVIDIA GPU", "fix": "run on a GPU machine"},
    {"name": "counters", "status": "n/a", "detail": "no GPU, nothing to sample", "fix": ""},
]


def test_the_message_names_each_failing_check_and_what_to_do():
    kind, text = doctor.folder_message("proj", ("advise", "build", "profile_cupti"), CHECKS, has_bundle=True)
    assert kind == types.MessageType.Error                  # advise is stopped: nothing can be shown
    assert "cannot run gpa advise, gpa profile --collector cupti" in text
    assert "- nvdisasm: nvdisasm was not found -> pip install nvidia-cuda-nvdisasm" in text
    assert "- gpu: no NVIDIA GPU -> run on a GPU machine" in text and "- driver: " in text
    assert "- counters" not in text and "- python" not in text and "building" not in text
    ok_disasm = [dict(c, status="ok") if c["name"] == "nvdisasm" else c for c in CHECKS]
    kind, text = doctor.folder_message("proj", ("advise", "profile_cupti"), ok_disasm, has_bundle=True)
    assert kind == types.MessageType.Warning and "saving shows the recorded bundle instead" in text
    assert doctor.folder_message("proj", ("advise",), ok_disasm, has_bundle=False) is None


def test_the_command_markdown_has_every_check():
    md = doctor.doctor_markdown({"checks": CHECKS, "ready": {"advise": False}})
    for c in CHECKS:
        assert f"| {c['name']} | {c['status']} |" in md
    assert "| gpa advise (replay a recorded bundle) | not possible |" in md
    assert "could not run" in doctor.doctor_markdown({"checks": [], "error": "gpa doctor could not run: X"})
