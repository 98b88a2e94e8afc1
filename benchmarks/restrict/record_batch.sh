#!/usr/bin/env bash
# On the GPU machine: build batch_probe.cu, time every configuration and run it once under ncu.
#
#   benchmarks/restrict/record_batch.sh OUTDIR
#
# Writes OUTDIR/batch_list.txt (configurations in launch order), OUTDIR/batch_times.txt (median of 5
# timed runs each), OUTDIR/batch_ncu.csv (ncu --page raw: time, units' shares of peak, DRAM bytes,
# L2 sectors) and OUTDIR/device.txt; table_batch.py turns them into batch_<device>.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="${1:?usage: record_batch.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/batch_probe"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$HERE/batch_probe.cu"
"$BIN" --list > "$OUTDIR/batch_list.txt"
"$BIN" --time > "$OUTDIR/batch_times.txt"
METRICS=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
METRICS="$METRICS,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex.sum,smsp__warps_active.avg.per_cycle_active"
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled -k 'regex:map|soft|col' "$BIN" > "$OUTDIR/batch_ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/batch_list.txt") batch configurations"
