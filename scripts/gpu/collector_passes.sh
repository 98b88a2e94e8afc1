#!/usr/bin/env bash
# Issue 17 on the GPU machine, first of two calls: replay passes by metric set with the device's
# CUPTI (passes.json), the GPU check's cost (gpu_check.json), the counters run (now without SM pipes)
# on every kernels/ case (counters_cases.json: re-records tests/profile/fixtures/counters.h100.json.gz),
# and probe with remeasure / overlap1 / default (warm cache) / sampling (bench_probe.json); log.txt.
#   bash scripts/gpu/collector_passes.sh
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/collector-out
{
  device_ready
  echo "== passes"
  timeout 60 python3 benchmarks/profiling/passes_on_device.py --json "$OUT/passes.json"
  echo "== gpu check"
  timeout 60 python3 benchmarks/profiling/gpu_check_cost.py --json "$OUT/gpu_check.json"
  echo "== counters run, every case"
  timeout 240 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/counters_cases.json"
  echo "== probe"
  timeout 150 python3 benchmarks/profiling/bench_one_run.py benchmarks/profiling/probe --repeat 3 --ncu-repeat 0 \
    --variants remeasure overlap1 default sampling --json "$OUT/bench_probe.json"
} 2>&1 | tee "$OUT/log.txt"
