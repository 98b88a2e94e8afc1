#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code (code-server
# 4.100.3 = VS Code 1.100.3) shown by headless Chromium, offline.
#
#   scripts/vscode-e2e.sh OUT_DIR [CASE_DIR]
#
# Installs what is missing (Debian chromium + ripgrep through apt-get,
# code-server from npm into a cache folder), builds and packages the
# extension and the e2e driver extension, then opens one workspace twice at once:
# trusted and untrusted (Restricted Mode). The driver writes what it saw to
# OUT_DIR/trusted.json and OUT_DIR/untrusted.json; tests/editors/
# test_vscode_e2e.py asserts on them. OUT_DIR/<mode>.png is a screenshot of
# the workbench at the end (DevTools protocol, scripts/vscode/screenshot.js).
#
# CASE_DIR: a kernels/<case> folder (its gpa.toml names a recorded bundle);
# the workspace is a copy of it, so the quick fix never edits the repo.
# Without one, the workspace is a one-kernel .cu file (checks the machinery).
#
# Environment:
#   GPA_E2E_PYTHON   Python that has gpa-lsp installed (default: python3)
#   GPA_E2E_CACHE    where code-server is installed (default: ~/.cache/gpa-vscode-e2e)
#   GPA_E2E_INSTALL  0: install nothing, fail with exit 3 when something is missing
#   GPA_E2E_MODES    default "trusted untrusted init" (init: examples/cmake_project without its
#                    gpa.toml, set up by the command GPA: Create gpa.toml, then its advice)
#   GPA_E2E_WAIT_S   seconds the driver waits for diagnostics (default 150)
# Exit status: 0 findings written, 3 a prerequisite is missing, other: failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT_DIR="$ROOT/editors/vscode"
OUT="${1:?usage: scripts/vscode-e2e.sh OUT_DIR [CASE_DIR]}"
CASE="${2:-}"
PYTHON="${GPA_E2E_PYTHON:-python3}"
CACHE="${GPA_E2E_CACHE:-$HOME/.cache/gpa-vscode-e2e}"
INSTALL="${GPA_E2E_INSTALL:-1}"
MODES="${GPA_E2E_MODES:-trusted untrusted init}"
WAIT_S="${GPA_E2E_WAIT_S:-150}"
CODE_SERVER_VERSION=4.100.3
RG_CACHE=/tmp/vscode-ripgrep-cache-1.15.11
RG_TARBALL=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PYTHON="$(command -v "$PYTHON" || true)"
log() { printf '[vscode-e2e] %s\n' "$*" >&2; }
missing() { log "MISSING: $*"; exit 3; }
t_start=$(date +%s)

# --- prerequisites ---------------------------------------------------------
[ -n "$PYTHON" ] || missing "python (GPA_E2E_PYTHON)"
command -v node >/dev/null || missing "node 20 (apt-get install nodejs)"
command -v npm >/dev/null || missing "npm"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] || missing "node 20 exactly (code-server $CODE_SERVER_VERSION needs it); found $(node --version)"

apt_install() {
  [ "$INSTALL" = 1 ] || missing "$* (GPA_E2E_INSTALL=0)"
  command -v apt-get >/dev/null || missing "$* (no apt-get here)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  log "apt-get install $*"
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >"$OUT/apt.log" 2>&1 \
    || { tail -20 "$OUT/apt.log" >&2; missing "$* (apt-get install failed)"; }
}
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
need=()
[ -n "$CHROMIUM" ] || need+=(chromium)
command -v rg >/dev/null || need+=(ripgrep)
# code-server's install builds a native module (kerberos) against these.
if [ ! -x "$CACHE/code-server/node_modules/.bin/code-server" ]; then
  command -v pkg-config >/dev/null || need+=(pkg-config)
  [ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || need+=(libkrb5-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  apt_install "${need[@]}"
  CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
  [ -n "$CHROMIUM" ] || missing chromium
fi

CODE_SERVER="$CACHE/code-server/node_modules/.bin/code-server"
if ! "$CODE_SERVER" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION "; then
  [ "$INSTALL" = 1 ] || missing "code-server $CODE_SERVER_VERSION in $CACHE (GPA_E2E_INSTALL=0)"
  # @vscode/ripgrep downloads rg at install time: hand it Debian's instead.
  if [ ! -s "$RG_CACHE/$RG_TARBALL" ]; then
    mkdir -p "$RG_CACHE"
    tmp_rg="$(mktemp -d)"
    cp "$(command -v rg)" "$tmp_rg/rg"
    tar -C "$tmp_rg" -czf "$RG_CACHE/$RG_TARBALL" rg
    rm -rf "$tmp_rg"
  fi
  rm -rf "$CACHE/code-server"
  mkdir -p "$CACHE/code-server"
  # npm 11 runs a dependency's install scripts only when allowScripts says so.
  cat >"$CACHE/code-server/package.json" <<'JSON'
{"name": "gpa-vscode-e2e-code-server", "private": true, "allowScripts": {"code-server": true, "argon2": true}}
JSON
  log "npm install code-server@$CODE_SERVER_VERSION into $CACHE/code-server"
  (cd "$CACHE/code-server" && npm_config_yes=true npm_config_unsafe_perm=true \
    npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION") >"$OUT/npm-code-server.log" 2>&1 \
    || { tail -30 "$OUT/npm-code-server.log" >&2; missing "code-server $CODE_SERVER_VERSION (npm install failed)"; }
  "$CODE_SERVER" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION " || missing "a working code-server $CODE_SERVER_VERSION"
fi
# The server runs from the workspace folder: make the checkout importable
# when gpa-lsp is not installed into that Python.
if ! (cd / && "$PYTHON" -c 'import gpa_lsp.server' 2>/dev/null); then
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
  log "gpa_lsp is not installed for $PYTHON: using PYTHONPATH=$ROOT"
fi
log "prerequisites ready after $(( $(date +%s) - t_start ))s"

# --- build the extension and the driver ----------------------------------
(
  cd "$EXT_DIR"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
  npm test
  npm run --silent package
  npm run --silent package:driver
) >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; log "building, unit-testing or packaging the extension failed"; exit 1; }
cp "$EXT_DIR/gpa-lsp.vsix" "$OUT/gpa-lsp.vsix"
log "extension packaged after $(( $(date +%s) - t_start ))s"

# --- one workspace ---------------------------------------------------------
make_workspace() { # $1 = folder to create; prints the .cu file the driver opens
  local ws="$1"
  rm -rf "$ws"
  if [ -n "$CASE" ]; then
    mkdir -p "$ws"
    (cd "$CASE" && tar --exclude=./build --exclude=./.gpa -cf - .) | (cd "$ws" && tar -xf -)
    # kernels/<case> sources include ../common/: keep that path valid beside the copy.
    if [ -d "$CASE/../common" ]; then
      rm -rf "$(dirname "$ws")/common"
      cp -r "$CASE/../common" "$(dirname "$ws")/common"
    fi
    "$PYTHON" - "$ws" <<'PY'
import sys, tomllib, pathlib
ws = pathlib.Path(sys.argv[1])
cfg = tomllib.loads((ws / "gpa.toml").read_text()) if (ws / "gpa.toml").is_file() else {}
sources = cfg.get("build", {}).get("sources", [])
cu = [ws / s for s in sources if s.endswith((".cu", ".cuh")) and (ws / s).is_file()] or sorted(ws.rglob("*.cu"))
if not cu:
    sys.exit(f"no .cu file in {ws}")
print(cu[0].resolve())
PY
  else
    mkdir -p "$ws"
    cat >"$ws/saxpy.cu" <<'CU'
__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
CU
    echo "$ws/saxpy.cu"
  fi
}

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

CS_PID=""; CR_PID=""
stop_all() {
  # Only the process groups this script started (setsid below), by id.
  [ -n "$CR_PID" ] && kill -- "-$CR_PID" 2>/dev/null || true
  [ -n "$CS_PID" ] && kill -- "-$CS_PID" 2>/dev/null || true
  sleep 1
  [ -n "$CR_PID" ] && kill -9 -- "-$CR_PID" 2>/dev/null || true
  [ -n "$CS_PID" ] && kill -9 -- "-$CS_PID" 2>/dev/null || true
  CS_PID=""; CR_PID=""
}
trap stop_all EXIT

run_mode() { # $1 = trusted | untrusted
  local mode="$1" dir="$OUT/$mode"
  rm -rf "$dir" "$OUT/$mode.json"
  mkdir -p "$dir/user/User" "$dir/markers"
  local ws="$dir/workspace"
  local file
  if [ "$mode" = init ]; then
    rm -rf "$ws"; mkdir -p "$ws"
    (cd "$ROOT/examples/cmake_project" && tar --exclude=./build --exclude=./.gpa --exclude=./gpa.toml -cf - .) \
      | (cd "$ws" && tar -xf -)
    file="$ws/src/rowsum.cu"
  else
    file="$(make_workspace "$ws")"
  fi
  mkdir -p "$ws/.vscode"
  # Workspace settings: replay the recorded bundle (no GPU here). In the
  # untrusted run the folder also tries to name programs: each would leave a
  # marker if VS Code or the extension ever ran it.
  "$PYTHON" - "$ws" "$dir/markers" "$mode" <<'PY'
import json, os, stat, sys, pathlib
ws, markers, mode = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
settings = {"gpa.profile.collector": "replay", "gpa.lineHeat": True}
if mode == "untrusted":
    evil = ws / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" > "{markers}/ran-$(basename "$1")"\nexit 1\n')
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    settings.update({
        "gpa.server.command": [str(evil), "server-command"],
        "gpa.server.python": str(evil),
        "gpa.build.command": [str(evil), "build-command"],
        "gpa.harness.command": [str(evil), "harness-command"],
        "gpa.trustedWorkspaces": [str(ws)],
    })
(ws / ".vscode" / "settings.json").write_text(json.dumps(settings, indent=2))
PY
  # User settings: the Python that has gpa-lsp, and trust on (untrusted) or off (trusted). The init
  # mode is the newcomer's machine: a bare interpreter (a venv without gpa-lsp or any package), so
  # the server and everything it imports come from the .vsix alone.
  local server_python="$PYTHON"
  if [ "$mode" = init ]; then
    "$PYTHON" -m venv --without-pip "$dir/bare-python" || { log "init: could not make a bare venv"; return 1; }
    server_python="$dir/bare-python/bin/python"
  fi
  "$PYTHON" - "$dir/user/User/settings.json" "$server_python" "$mode" <<'PY'
import json, sys
path, python, mode = sys.argv[1:]
json.dump({
    "gpa.server.python": python,
    "gpa.trace.server": "messages",
    "security.workspace.trust.enabled": mode == "untrusted",
    "security.workspace.trust.startupPrompt": "never",
    "security.workspace.trust.banner": "never",
    "workbench.startupEditor": "none",
    "workbench.enableExperiments": False,
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "update.mode": "none",
    "git.enabled": False,
}, open(path, "w"), indent=2)
PY
  "$PYTHON" - "$dir/driver.json" "$OUT/$mode.json" "$mode" "$file" "$WAIT_S" <<'PY'
import json, sys
path, out, mode, file, wait_s = sys.argv[1:]
json.dump({"out": out, "mode": mode, "file": file, "waitS": int(wait_s)}, open(path, "w"))
PY
  "$CODE_SERVER" --user-data-dir "$dir/user" --extensions-dir "$dir/extensions" \
    --install-extension "$EXT_DIR/gpa-lsp.vsix" --install-extension "$EXT_DIR/gpa-e2e-driver.vsix" \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; log "installing the extensions failed"; return 1; }

  local port; port="$(free_port)"
  printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$port" >"$dir/code-server.yaml"
  # A cache of its own: each run analyses from scratch, not from the user's ~/.cache/gpa-lsp.
  GPA_E2E_CONFIG="$dir/driver.json" XDG_CACHE_HOME="$dir/cache" setsid "$CODE_SERVER" --config "$dir/code-server.yaml" \
    --user-data-dir "$dir/user" --extensions-dir "$dir/extensions" \
    --disable-telemetry --disable-update-check --disable-getting-started-override --ignore-last-opened \
    "$ws" >"$dir/code-server.log" 2>&1 &
  CS_PID=$!
  local up=0
  for _ in $(seq 1 120); do
    if "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; then up=1; break; fi
    kill -0 "$CS_PID" 2>/dev/null || break
    sleep 0.5
  done
  [ "$up" = 1 ] || { tail -30 "$dir/code-server.log" >&2; log "code-server did not come up"; return 1; }

  local folder_q; folder_q="$("$PYTHON" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$ws")"
  local cdp_port; cdp_port="$(free_port)"
  setsid "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$dir/chromium" --window-size=1400,900 --remote-debugging-port="$cdp_port" \
    "http://127.0.0.1:$port/?folder=$folder_q" >"$dir/chromium.log" 2>&1 &
  CR_PID=$!
  local limit=$(( WAIT_S * 3 + 120 ))
  for _ in $(seq 1 $(( limit * 2 ))); do
    [ -s "$OUT/$mode.json" ] && break
    kill -0 "$CS_PID" 2>/dev/null || { log "code-server exited"; break; }
    kill -0 "$CR_PID" 2>/dev/null || { log "chromium exited"; break; }
    sleep 0.5
  done
  # What a person would see at the end (the driver leaves the .cu in front).
  if [ -s "$OUT/$mode.json" ]; then
    node --experimental-websocket --no-warnings "$ROOT/scripts/vscode/screenshot.js" "$cdp_port" "$OUT/$mode.png" \
      2>>"$dir/chromium.log" || log "$mode: no screenshot (see $dir/chromium.log)"
  fi
  stop_all
  if [ ! -s "$OUT/$mode.json" ]; then
    tail -20 "$dir/code-server.log" >&2
    log "$mode: the driver wrote no findings"
    return 1
  fi
  log "$mode: findings in $OUT/$mode.json after $(( $(date +%s) - t_start ))s"
}

# The modes at once, each in a subshell with its own code-server and Chromium (its own folder,
# ports and process groups): most of a mode is VS Code starting and the driver waiting on it, so
# the two overlap (about 32 s each here; the suite runs this on one of its workers).
MODE_PIDS=()
stop_modes() {
  local p
  for p in "${MODE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait
}
trap stop_modes EXIT
for mode in $MODES; do
  ( trap stop_all EXIT; trap 'exit 143' TERM INT; run_mode "$mode" ) &
  MODE_PIDS+=("$!")
done
status=0
for p in "${MODE_PIDS[@]}"; do wait "$p" || status=1; done
MODE_PIDS=()
exit "$status"
