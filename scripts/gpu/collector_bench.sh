#!/usr/bin/env bash
# Issue 17 on the GPU machine, second call: the replay's cost by metric set (replay.json) and
# benchmarks/profiling/bench_one_run.py on its four harnesses against the tree before this work
# (bench.json; BEFORE: that tree, default ../.bench-before); log.txt.
#   bash scripts/gpu/collector_bench.sh
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/collector-out
BEFORE=${BEFORE:-../.bench-before}
{
  device_ready
  echo "== replay cost"
  timeout 60 python3 benchmarks/profiling/replay_cost.py --json "$OUT/replay.json"
  echo "== bench"
  timeout 480 python3 benchmarks/profiling/bench_one_run.py --before "$BEFORE" --repeat 3 --json "$OUT/bench.json"
} 2>&1 | tee "$OUT/log.txt"
