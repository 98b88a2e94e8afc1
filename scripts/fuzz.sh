#!/usr/bin/env bash
# The input fuzzers of tests/fuzz/ (bundles, gpa.toml, editor settings, cubins, the result cache) for
# longer than CI runs them, with a fresh random seed each time: EXAMPLES inputs per target
# (default 2000; about 10 minutes on a laptop). Hypothesis prints the failing input to reproduce.
#   scripts/fuzz.sh [EXAMPLES] [pytest args, e.g. -k cubin]
set -euo pipefail
cd "$(dirname "$0")/.."
export GPA_FUZZ_EXAMPLES="${1:-2000}"
export GPA_FUZZ_RANDOM=1
shift || true
exec python3 -m pytest -q tests/fuzz "$@"
