#!/usr/bin/env bash
# On the GPU machine: build prefetch_probe.cu, time every configuration and run it once under ncu.
#
#   benchmarks/reorder/record.sh OUTDIR
#
# Writes OUTDIR/prefetch_list.txt (configurations in launch order), OUTDIR/prefetch_times.txt (median of 5
# timed runs each), OUTDIR/prefetch_ncu.csv (ncu --page raw: time, units' shares of peak, issue,
# warp instructions executed) and OUTDIR/device.txt; README.md's table is read from them.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="${1:?usage: record.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/prefetch_probe"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$HERE/prefetch_probe.cu"
"$BIN" --list > "$OUTDIR/prefetch_list.txt"
"$BIN" --time > "$OUTDIR/prefetch_times.txt"
METRICS=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
METRICS="$METRICS,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active"
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled -k 'regex:taps' "$BIN" > "$OUTDIR/prefetch_ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/prefetch_list.txt") prefetch configurations"
