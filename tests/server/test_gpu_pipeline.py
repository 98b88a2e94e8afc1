"""On a machine with a GPU (marker ``gpu``; never in CI): a save really profiles, and applyAndMeasure measures."""

from __future__ import annotations

import glob

import pytest
from lsprotocol import types

from .lsp_session import open_doc, save_doc, session, states, wait_for

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_gpu():
    if not glob.glob("/dev/nvidia[0-9]*"):
        pytest.skip("no NVIDIA GPU on this machine")


async def test_save_profiles_on_the_gpu_and_measures_a_fix(recorded_ws):
    app = recorded_ws / "app.cu"
    async with session(recorded_ws, trusted=True) as client:
        uri = open_doc(client, app)
        n0 = len(client.status)
        save_doc(client, app)
        await wait_for(lambda: "profiling" in states(client)[n0:], 120, "the profiling stage")
        await wait_for(lambda: states(client)[-1] in ("idle", "error") and "analysing" in states(client)[n0:],
                       300, "the end of the run")
        last = client.status[-1]
        assert last["state"] == "idle", last
        assert "no GPU" not in last["message"] and "replay" not in last["message"]
        diags = await wait_for(lambda: client.diagnostics.get(uri), 30, "advice from the live profile")
        sr = next(d for d in diags if d.code == "strength_reduction")
        arg = {"uri": uri, "diagnostic": client.protocol._converter.unstructure(sr), "fixIndex": 0}
        res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="gpa.applyAndMeasure", arguments=[arg]))
        res = res if isinstance(res, dict) else res._asdict()
        print("applyAndMeasure:", res)
        assert isinstance(res["achieved"], float) and res["achieved"] > 0, res
        assert "achieved" in res["message"]
