"""The verification phase as an editor sees it (pytest-lsp, real server, no GPU: compiled and compared).

A save in a trusted folder: the sampled advice is published, the status says ``verifying`` with
the fix being tried, and the diagnostics that follow carry what the experiment found. An untrusted
folder shows the recording and builds nothing.
"""

from __future__ import annotations

import asyncio
import glob

import pytest

from .lsp_session import ANALYSIS_MODULES, module_dump_env, modules_of, open_doc, save_doc, session, states, wait_for

pytestmark = pytest.mark.skipif(bool(glob.glob("/dev/nvidia[0-9]*")),
                                reason="describes the no-GPU path (static verification only)")

FOUND = ("compiled:", "tried:", "measured")


async def test_save_publishes_advice_then_verified_advice(recorded_ws, tmp_path):
    app = recorded_ws / "app.cu"
    dump = tmp_path / "modules"
    dump.mkdir()
    async with session(recorded_ws, trusted=True, env=module_dump_env(dump)) as client:
        uri = open_doc(client, app)
        await wait_for(lambda: client.diagnostics.get(uri), 60, "the recorded results at start")
        n = len(client.status)
        save_doc(client, app)
        await wait_for(lambda: "verifying" in states(client)[n:], 120, "the verification phase")
        seen = states(client)[n:]
        assert seen.index("analysing") < seen.index("verifying")
        await wait_for(lambda: states(client)[-1] == "idle" and states(client)[n:].count("verifying") >= 1
                       and any(f in d.message for d in client.diagnostics.get(uri, []) for f in FOUND),
                       240, "verified diagnostics")
        # progress names the fix being tried ("verifying 1/3: GPA: add #pragma unroll 4")
        verifying = [s for s in client.status[n:] if s["state"] == "verifying"]
        assert any("/" in s["message"] and "GPA:" in s["message"] for s in verifying), verifying
        assert (recorded_ws / "build").exists()            # the run built (trusted)
        # analysed and verified in the folder's worker: the server process never imported either
        await asyncio.sleep(0.3)                           # a dump written after the run
        mods = modules_of(dump, client._server.pid)
        assert "gpa_lsp.server.worker" in mods and not mods & set(ANALYSIS_MODULES)


async def test_untrusted_folder_builds_and_verifies_nothing(recorded_ws):
    app = recorded_ws / "app.cu"
    async with session(recorded_ws, trusted=False) as client:
        uri = open_doc(client, app)
        await wait_for(lambda: client.diagnostics.get(uri), 60, "the recorded results")
        save_doc(client, app)
        await wait_for(lambda: "untrusted" in states(client), 30, "the untrusted status")
        assert "verifying" not in states(client) and "building" not in states(client)
        assert not (recorded_ws / "build").exists()
