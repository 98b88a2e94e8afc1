#!/usr/bin/env bash
# Measure what coalescing a per-lane walk unloads, on the GPU machine (lanewalk_probe.cu):
#
#   benchmarks/coalescing/record_lanewalk.sh OUTDIR
#
# Writes OUTDIR/lanewalk_list.txt (the configurations, in launch order),
# OUTDIR/lanewalk_times.txt (median of 5 timed runs each, no profiler),
# OUTDIR/lanewalk_ncu.csv (ncu --page raw, one launch each: time, unit shares of
# peak, L1 hit rate, L2 sectors from L1, requests and sectors, DRAM bytes) and
# OUTDIR/device.txt. benchmarks/coalescing/table_lanewalk.py adds them to
# gpa_lsp/data/coalescing.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="${1:?usage: record_lanewalk.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/lanewalk_probe"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$HERE/lanewalk_probe.cu"
"$BIN" --list > "$OUTDIR/lanewalk_list.txt"
"$BIN" --time > "$OUTDIR/lanewalk_times.txt"
CORE=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
# cache counters: kept only where this ncu knows them (a wrong name fails the whole run)
KNOWN="$(dirname "$BIN")/known.txt"
ncu --query-metrics --chip gh100 > "$KNOWN" 2>&1 || true
METRICS="$CORE"
for m in $(cat "$HERE/cache_metrics.txt"); do
  if grep -qw -- "${m%%.*}" "$KNOWN"; then METRICS="$METRICS,$m"; else echo "skipped $m" >&2; fi
done
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled -k 'regex:scalar|ell|vector' "$BIN" > "$OUTDIR/lanewalk_ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/lanewalk_list.txt") configurations"
