#!/usr/bin/env bash
# Measure the DRAM share a streaming loop reaches per bytes of loads in flight
# per SM (scripts/gpu/mlp_probe.cu), on the GPU machine:
#
#   scripts/gpu/record_mlp.sh OUTDIR
#
# Writes OUTDIR/mlp_list.txt (the configurations, in launch order) and
# OUTDIR/mlp_ncu.csv (ncu --page raw, every launch; the odd ones are warm-ups).
# scripts/gpu/mlp_table.py turns them into gpa_lsp/data/memory_parallelism.json.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUTDIR="${1:?usage: record_mlp.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$OUTDIR/mlp_probe"
nvcc -O3 -arch=sm_90 -o "$BIN" "$REPO/scripts/gpu/mlp_probe.cu"
"$BIN" --list > "$OUTDIR/mlp_list.txt"
METRICS=$(python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled "$BIN" > "$OUTDIR/mlp_ncu.csv"
device_line > "$OUTDIR/mlp_device.txt"
echo "recorded $(wc -l < "$OUTDIR/mlp_list.txt") configurations"
