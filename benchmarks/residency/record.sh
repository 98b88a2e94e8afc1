#!/usr/bin/env bash
# Run the L2 residency probe on the GPU machine (benchmarks/residency/README.md):
#   bash benchmarks/residency/record.sh OUTDIR
# Writes OUTDIR/residency.jsonl (the timed modes and the device's properties) and
# OUTDIR/single_ncu.csv (ncu, caches not flushed: every one-pass launch's duration, 6 per
# footprint in the order of --single's lines). benchmarks/residency/table.py reads both.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUTDIR="${1:?usage: record.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/residency_probe"
nvcc -O3 -arch=sm_90 -o "$BIN" "$HERE/residency_probe.cu"
"$BIN" > "$OUTDIR/residency.jsonl"
"$BIN" --single > "$OUTDIR/single_list.jsonl"
ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    --print-units base -k stream_read "$BIN" --single > "$OUTDIR/single_ncu.csv"
echo "recorded $(wc -l < "$OUTDIR/residency.jsonl") lines, $(grep -c stream_read "$OUTDIR/single_ncu.csv") single launches"
