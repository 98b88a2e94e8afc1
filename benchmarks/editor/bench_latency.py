"""Editor-request latency (hover, code lens, code action) while an analysis runs.

Not a test: prints a table (and --json) of p50/p99 latencies in two phases of
the same run: *idle* (the reference) and *busy* (the server re-analyses the
recorded bundle in a loop via gpa.profile with collector = replay). Target:
busy p99 < 50 ms.

    python benchmarks/editor/bench_latency.py [CASE_DIR] [--requests 300] [--json out.json]

CASE_DIR defaults to the largest kernels/<case> with a recorded bundle, else
tests/server/workspace.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from lsprotocol import types  # noqa: E402

from tests.server.lsp_session import open_doc, session, wait_for  # noqa: E402


def largest_case() -> Path:
    cases = []
    for gpa in sorted((REPO / "kernels").glob("*/gpa.toml")):
        import tomllib
        cfg = tomllib.loads(gpa.read_text())
        bundle = cfg.get("profile", {}).get("bundle")
        if bundle and (gpa.parent / bundle).is_file():
            cases.append(((gpa.parent / bundle).stat().st_size, gpa.parent))
    return max(cases)[1] if cases else REPO / "tests/server/workspace"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def measure(client, uri: str, lines: list[int], n: int, diag) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"hover": [], "codeLens": [], "codeAction": []}
    doc = types.TextDocumentIdentifier(uri=uri)
    for i in range(n):
        line = lines[i % len(lines)]
        t = time.perf_counter()
        await client.text_document_hover_async(types.HoverParams(text_document=doc, position=types.Position(line, 4)))
        out["hover"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
        out["codeLens"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=diag.range, context=types.CodeActionContext(diagnostics=[diag])))
        out["codeAction"].append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.005)       # an editor does not send back to back
    return out


async def run(case: Path, n: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="gpa-bench-"))
    ws = tmp / case.name
    shutil.copytree(case, ws, ignore=shutil.ignore_patterns("build", ".gpa"))
    cfg = (ws / "gpa.toml").read_text()
    import tomllib
    conf = tomllib.loads(cfg)
    source = ws / conf["build"]["sources"][0]
    settings = {"profile": {"collector": "replay"}, "server": {"runOnSave": False}}
    async with session(ws, trusted=True, settings=settings, cache=tmp / "cache") as client:
        uri = open_doc(client, source)
        diags = await wait_for(lambda: client.diagnostics.get(uri), 120, "diagnostics")
        lines = sorted({d.range.start.line for d in diags})
        heat = await wait_for(lambda: client.line_heat.get(uri), 30, "line heat")
        lines = sorted(set(lines) | {h["line"] for h in heat})
        diag = diags[0]
        idle = await measure(client, uri, lines, n, diag)
        # busy: keep the server analysing (a replayed bundle through the whole pipeline) while measuring
        stop = False
        runs = 0

        async def keep_busy():
            nonlocal runs
            while not stop:
                n0 = len(client.status)
                await client.workspace_execute_command_async(types.ExecuteCommandParams(command="gpa.profile"))
                await wait_for(lambda: any(s["state"] == "analysing" for s in client.status[n0:]), 60, "analysing")
                await wait_for(lambda: client.status[-1]["state"] in ("idle", "error"), 120, "the run to end")
                runs += 1

        busy_task = asyncio.create_task(keep_busy())
        await wait_for(lambda: client.status and client.status[-1]["state"] == "analysing", 60, "an analysis")
        busy = await measure(client, uri, lines, n, diag)
        stop = True
        await busy_task
    shutil.rmtree(tmp, ignore_errors=True)
    res = {"case": case.name, "requests": n, "analyses_during_busy": runs, "phases": {}}
    for phase, data in (("idle", idle), ("busy", busy)):
        res["phases"][phase] = {k: {"p50_ms": round(pct(v, 50), 2), "p99_ms": round(pct(v, 99), 2),
                                    "mean_ms": round(statistics.mean(v), 2)} for k, v in data.items()}
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?", type=Path)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    case = (args.case or largest_case()).resolve()
    res = asyncio.run(run(case, args.requests))
    print(f"case {res['case']}: {res['requests']} requests of each kind per phase, "
          f"{res['analyses_during_busy']} analyses during the busy phase")
    print(f"{'request':12s} {'idle p50':>9s} {'idle p99':>9s} {'busy p50':>9s} {'busy p99':>9s} {'p99 ratio':>9s}")
    for k in ("hover", "codeLens", "codeAction"):
        i, b = res["phases"]["idle"][k], res["phases"]["busy"][k]
        print(f"{k:12s} {i['p50_ms']:9.2f} {i['p99_ms']:9.2f} {b['p50_ms']:9.2f} {b['p99_ms']:9.2f} "
              f"{b['p99_ms'] / max(i['p99_ms'], 1e-6):9.2f}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
