#!/usr/bin/env bash
# Issue 17 on the GPU machine, in one call: the injection library's counters mode (CUPTI Range
# Profiler) on every kernels/ case, the kernel filter check, benchmarks/profiling/bench_one_run.py
# on its four harnesses, and a same-session ncu comparison on four cases. Writes under $OUT:
# counters_cases.json, filter.json, bench.json, counters_ncu.json and log.txt.
#   bash scripts/gpu/collector_run.sh [--quick]
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/collector-out
REPEAT=3; [ "${1:-}" = "--quick" ] && REPEAT=2
{
  device_line
  python3 - <<'PY'
import subprocess
from pathlib import Path
from gpa_lsp.profile.cupti.builder import compile_argv, find_cc, find_cupti, injection_library
c = find_cupti()
print(c)
r = subprocess.run(compile_argv(find_cc(), c, Path("/tmp/rp-check.so")), capture_output=True, text=True)
print("build with the Range Profiler:", r.returncode, r.stderr[:3000])
print(injection_library(c))
PY
  echo "== counters mode, timing marks, on probe"
  GPA_KEEP_CUPTI_OUT=/tmp/probe-raw GPA_PROFILE_TIMING=1 timeout 90 python3 -m gpa_lsp.commands.profile \
    benchmarks/profiling/probe --out /tmp/probe.gpabundle 2>&1 | tail -45
  grep -v "^[PLKRM] " /tmp/probe-raw/counters.txt | head -40
  echo "== counters vs recorded ncu, every case"
  timeout 200 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/counters_cases.json"
  if [ -z "${SKIP_FILTER:-}" ]; then
    echo "== kernel filter"
    timeout 60 python3 benchmarks/profiling/check_kernel_filter.py --json "$OUT/filter.json"
  fi
  echo "== bench (repeat $REPEAT)"
  timeout 360 python3 benchmarks/profiling/bench_one_run.py --repeat "$REPEAT" --json "$OUT/bench.json"
  echo "== same-session ncu"
  timeout 90 python3 benchmarks/profiling/counters_vs_ncu.py --ncu "$OUT/counters_ncu.json" \
    kernels/lavamd_unroll kernels/saxpy_stream kernels/mandelbrot kernels/transpose_banks
} 2>&1 | tee "$OUT/log.txt"
