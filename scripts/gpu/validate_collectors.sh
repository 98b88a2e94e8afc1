#!/usr/bin/env bash
# Device check of both collectors (run through the `run` tool; writes under $OUT):
# records the probe and callee bundles, keeps CUPTI's raw output and ncu's
# exports, runs the overhead benchmark, and packs it all in $OUT/results.tgz.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
cd "$REPO"
out_dir /tmp/gpa-out
W=/tmp/gpa-validate; rm -rf "$W"; mkdir -p "$W"
{
  device_line
  ls /usr/local/cuda/extras/CUPTI/lib64 2>&1 | head -5
  which ncu cc gcc c++filt cuobjdump; ncu --version | tail -1; python3 --version
  python3 -m gpa_lsp.profile.cupti.builder
  for c in probe callee; do
    GPA_KEEP_CUPTI_OUT="$W/$c-cupti" GPA_KEEP_NCU_EXPORT="$W/$c-ncu" \
      bash scripts/gpu/record_case.sh "benchmarks/profiling/$c"
    for f in "benchmarks/profiling/$c/recorded/"*.gpabundle; do cp "$f" "$W/$c-$(basename "$f")"; done
  done
  python3 benchmarks/profiling/bench_overhead.py benchmarks/profiling/probe --repeat 5 --json "$W/bench-probe.json" | tail -1
  python3 benchmarks/profiling/bench_overhead.py benchmarks/profiling/long --repeat 3 --ncu-repeat 1 --json "$W/bench-long.json" | tail -1
  # stress: the shortest sampling period on the long harness (buffers, drains, dropped samples)
  GPA_KEEP_CUPTI_OUT="$W/stress-cupti" python3 -m gpa_lsp.commands.profile benchmarks/profiling/long --collector cupti \
    --no-build --sampling-period 5 --out "$W/stress-cupti.gpabundle"
  grep -c "^P" "$W/stress-cupti/cupti.txt"; grep "^[TEX]" "$W/stress-cupti/cupti.txt" | sort | uniq -c | sort -rn | head
} 2>&1 | tee "$W/log.txt"
tar czf "$OUT/results.tgz" -C "$W" .
cp "$W/log.txt" "$OUT/log.txt"
