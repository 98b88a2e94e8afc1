#!/usr/bin/env bash
# Issue 17 on the GPU machine: a warm default `gpa profile` of probe against the tree before the
# late imports (BEFORE, default .bench-before: `git archive ec5df86 gpa_lsp`), sampling only, and
# the default with the periodic drain at 20 ms (bench.json); then where the sampling run's end goes
# and what the library's settings change in it (exit.json); log.txt. About 60 s on the H100.
#   bash scripts/gpu/collector_exit.sh
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/collector-out
BEFORE=${BEFORE:-.bench-before}
{
  device_ready
  echo "== bench"
  timeout 100 python3 benchmarks/profiling/bench_one_run.py benchmarks/profiling/probe --before "$BEFORE" \
    --repeat 3 --ncu-repeat 0 --variants before default sampling drain20 --json "$OUT/bench.json"
  echo "== exit cost"
  timeout 45 python3 benchmarks/profiling/exit_cost.py --rounds 4 --json "$OUT/exit.json"
} 2>&1 | tee "$OUT/log.txt"
