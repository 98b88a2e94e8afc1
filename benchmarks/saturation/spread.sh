#!/usr/bin/env bash
# One device call (~40 s): spread.cu timed (events, median of 9) and its 256-thread configurations
# under ncu (the unit shares the profile of the original grid records). Writes under $OUT:
# spread.jsonl (timings), spread_ncu.csv (metrics, one row per launch in spread --ncu's order).
#   OUT=... bash benchmarks/saturation/spread.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpa-out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv,noheader
B="$(mktemp -d)"
nvcc -O3 -arch=sm_90 -o "$B/spread" benchmarks/saturation/spread.cu || exit 1
"$B/spread" | tee "$OUT/spread.jsonl"
NCU="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
M="l1tex__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.max.pct_of_peak_sustained_elapsed"
M="$M,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum"
timeout 90 "$NCU" --clock-control none --metrics "$M" --csv --page raw "$B/spread" --ncu \
  > "$OUT/spread_ncu.csv" 2> "$OUT/spread_ncu.err" || { echo "ncu FAILED"; tail -5 "$OUT/spread_ncu.err"; }
wc -l "$OUT/spread_ncu.csv"
exit 0
