#!/usr/bin/env bash
# benchmarks/waves/strips.cu on the GPU machine: event timings (strips.jsonl) and, under ncu, each
# configuration's DRAM share of peak and duration (strips_ncu.csv; the second of its two launches).
#   bash benchmarks/waves/strips_run.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?OUTDIR}"; mkdir -p "$out"
bin="$(mktemp -d)/strips"
nvcc -O3 -arch=sm_90 -o "$bin" benchmarks/waves/strips.cu || exit 1
configs=("1024 8 33 132" "4096 1 2 4 8 16 33 66 132 264" "16384 16 66 132 264 528")
: > "$out/strips.jsonl"
for c in "${configs[@]}"; do "$bin" $c >> "$out/strips.jsonl"; done
cat "$out/strips.jsonl"
: > "$out/strips_ncu.csv"
for c in "${configs[@]}"; do
  ncu --csv --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum \
    "$bin" --once $c >> "$out/strips_ncu.csv" 2> "$out/strips_ncu.err" || echo "ncu FAILED on $c"
done
grep -c standardize "$out/strips_ncu.csv"
