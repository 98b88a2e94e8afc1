#!/usr/bin/env bash
# Issue 17 on the GPU machine, in one call: the injection library's counters mode (CUPTI Range
# Profiler) on every kernels/ case, a same-session ncu comparison on three, the kernel filter check,
# and benchmarks/profiling/bench_one_run.py on its four harnesses. Writes under $OUT:
# counters_cases.json, counters_ncu.json, filter.json, bench.json, and log.txt.
#   bash scripts/gpu/collector_run.sh [--quick]
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/collector-out}
mkdir -p "$OUT"
QUICK=${1:-}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -m gpa_lsp.profile.cupti.builder | tail -2
  echo "== counters mode, timing marks, on probe"
  GPA_PROFILE_TIMING=1 timeout 120 python3 -m gpa_lsp.commands.profile benchmarks/profiling/probe \
    --out /tmp/probe.gpabundle 2>&1 | tail -40
  echo "== counters vs recorded ncu, every case"
  timeout 240 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/counters_cases.json"
  echo "== same-session ncu"
  timeout 120 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/counters_ncu.json" --ncu \
    kernels/lavamd_unroll kernels/saxpy_stream kernels/mandelbrot kernels/transpose_banks
  echo "== kernel filter"
  timeout 90 python3 benchmarks/profiling/check_kernel_filter.py --json "$OUT/filter.json"
  echo "== bench"
  if [ "$QUICK" = "--quick" ]; then
    timeout 200 python3 benchmarks/profiling/bench_one_run.py --repeat 2 --json "$OUT/bench.json"
  else
    timeout 330 python3 benchmarks/profiling/bench_one_run.py --repeat 3 --json "$OUT/bench.json"
  fi
} 2>&1 | tee "$OUT/log.txt"
