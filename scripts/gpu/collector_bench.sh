#!/usr/bin/env bash
# Issue 17 on the GPU machine, second call: the replay's cost by metric set (replay.json) and
# benchmarks/profiling/bench_one_run.py on its four harnesses against the tree before this work
# (bench.json; BEFORE: that tree, default ../.bench-before); log.txt.
#   bash scripts/gpu/collector_bench.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/collector-out}
BEFORE=${BEFORE:-../.bench-before}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader
  python3 -m gpa_lsp.profile.cupti.builder
  echo "== replay cost"
  timeout 60 python3 benchmarks/profiling/replay_cost.py --json "$OUT/replay.json"
  echo "== bench"
  timeout 480 python3 benchmarks/profiling/bench_one_run.py --before "$BEFORE" --repeat 3 --json "$OUT/bench.json"
} 2>&1 | tee "$OUT/log.txt"
