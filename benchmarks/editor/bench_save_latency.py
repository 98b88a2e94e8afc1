"""Save -> diagnostics in the editor, with the build taken out (issue 17's editor target).

    PYTHONPATH=. python3 benchmarks/editor/bench_save_latency.py [PROJECT_DIR] [--saves 3] [--json OUT]

Starts the real server (``python3 -m gpa_lsp.server``, stdio) on a copy of the project, trusted,
opens its first source and saves it ``--saves`` times, each time with a comment line changed (an
unchanged source is answered from the server's cache); the first save is a warm-up (the injection
library and the server's worker start). A small JSON-RPC client (standard library only, so the
server's own packages are all it needs) timestamps the server's ``gpa/status`` stages and the
``textDocument/publishDiagnostics`` of the saved file. Per save:

- ``build_s``: from the ``building`` stage to the next stage;
- ``after_build_s``: from the end of the build to the first diagnostics with advice (the sampled
  advice; target: at most 1.5 s for a 0.4 s harness);
- ``save_to_diagnostics_s``: from the save (``[server] debounce_ms`` included);
- ``refined_s``: from the end of the build to the diagnostics after the ``measuring`` stage (unit
  throughput), when there is one.

On a machine without a GPU the server replays the project's recorded bundle (``no_gpu``): the
figures then time the build and the analysis only. PROJECT_DIR defaults to
benchmarks/profiling/probe (0.45 s bare on the H100).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp")


class Client:
    """JSON-RPC over the server's stdio: requests answered, notifications queued with their time."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=cwd)
        self.events: queue.Queue = queue.Queue()
        self.responses: dict[int, dict] = {}
        self.next_id = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, msg: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            now = time.monotonic()
            if "method" in msg and "id" in msg:      # a request from the server: answer it
                self._send({"id": msg["id"], "result": self._answer(msg)})
            elif "method" in msg:
                self.events.put((now, msg["method"], msg.get("params")))
            else:
                self.responses[msg["id"]] = msg

    @staticmethod
    def _answer(msg: dict):
        if msg["method"] == "workspace/configuration":
            return [None for _ in msg.get("params", {}).get("items", [])]
        return None

    def request(self, method: str, params: dict, timeout: float = 60) -> dict:
        self.next_id += 1
        rid = self.next_id
        self._send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while rid not in self.responses:
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            time.sleep(0.01)
        return self.responses.pop(rid)

    def notify(self, method: str, params: dict) -> None:
        self._send({"method": method, "params": params})

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=10)
            self.notify("exit", {})
            self.proc.wait(10)
        except (TimeoutError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def one_save(client: Client, uri: str, timeout: float) -> dict:
    t_save = time.monotonic()
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    stages: list[tuple[float, str]] = []
    first_diag = refined = None
    deadline = t_save + timeout
    while time.monotonic() < deadline:
        try:
            t, method, params = client.events.get(timeout=0.2)
        except queue.Empty:
            continue
        if method == "gpa/status":
            stages.append((t, params.get("state", "?")))
            if params.get("state") in ("idle", "error") and any(s != "idle" for _, s in stages[:-1]):
                break
        elif method == "textDocument/publishDiagnostics" and params.get("uri") == uri and params.get("diagnostics"):
            if first_diag is None and any(s in ("profiling", "analysing", "measuring") for _, s in stages):
                first_diag = t
            elif first_diag is not None and any(s == "measuring" for _, s in stages):
                refined = t
    names = [s for _, s in stages]
    built = next((t for (t, s), (_, prev) in zip(stages[1:], stages) if prev == "building"), None)
    start_build = next((t for t, s in stages if s == "building"), None)
    end_build = built or t_save
    return {
        "stages": [(round(t - t_save, 3), s) for t, s in stages],
        "build_s": round(built - start_build, 3) if built and start_build else None,
        "after_build_s": round(first_diag - end_build, 3) if first_diag else None,
        "save_to_diagnostics_s": round(first_diag - t_save, 3) if first_diag else None,
        "refined_s": round(refined - end_build, 3) if refined else None,
        "mode": "profiled" if "profiling" in names else "replayed",
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(REPO / "benchmarks" / "profiling" / "probe"))
    ap.add_argument("--saves", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / Path(args.project).name
        shutil.copytree(args.project, ws, ignore=shutil.ignore_patterns("build", ".gpa"))
        source = next(p for p in sorted(ws.iterdir()) if p.suffix in SOURCE_SUFFIXES)
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "GPA_LSP_CACHE": str(Path(tmp) / "cache")}
        client = Client([sys.executable, "-m", "gpa_lsp.server"], env, str(ws))
        try:
            root = ws.as_uri()
            client.request("initialize", {"processId": os.getpid(), "rootUri": root,
                                          "workspaceFolders": [{"uri": root, "name": ws.name}],
                                          "capabilities": {"workspace": {"configuration": True}},
                                          "initializationOptions": {"trusted": True}})
            client.notify("initialized", {})
            uri = source.as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "cuda-cpp", "version": 1, "text": source.read_text()}})
            time.sleep(1.0)
            while not client.events.empty():   # what the open itself started (a replay, no build)
                client.events.get()
            text = source.read_text()
            for i in range(args.saves):
                # a changed source each time: an unchanged one is answered from the server's cache
                source.write_text(text + f"\n// save {i}\n")
                row = one_save(client, uri, args.timeout)
                rows.append(row)
                print(f"save {i}: {row['mode']}, build {row['build_s']} s, diagnostics {row['after_build_s']} s "
                      f"after the build ({row['save_to_diagnostics_s']} s after the save), refined "
                      f"{row['refined_s']} s after the build; stages {row['stages']}", flush=True)
                time.sleep(0.5)
                while not client.events.empty():
                    client.events.get()
        finally:
            client.close()
    timed = [r["after_build_s"] for r in rows[1:] if r["after_build_s"] is not None]
    out = {"project": args.project, "saves": rows,
           "after_build_median_s": statistics.median(timed) if timed else None}
    print(f"median, diagnostics after the build (warm saves): {out['after_build_median_s']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
