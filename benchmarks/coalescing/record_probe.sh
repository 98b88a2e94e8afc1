#!/usr/bin/env bash
# Run one of the coalescing probes timed and under ncu, on the GPU machine:
#
#   benchmarks/coalescing/record_probe.sh lanewalk OUTDIR      (lanewalk_probe.cu)
#   benchmarks/coalescing/record_probe.sh lanewalk_spread OUTDIR   (lanewalk_spread_probe.cu)
#   benchmarks/coalescing/record_probe.sh fieldgather OUTDIR   (fieldgather_probe.cu)
#   benchmarks/coalescing/record_probe.sh loopfree OUTDIR      (loopfree_probe.cu)
#   benchmarks/coalescing/record_probe.sh overlap OUTDIR       (overlap_probe.cu)
#   benchmarks/coalescing/record_probe.sh tile OUTDIR          (tile_probe.cu)
#   benchmarks/coalescing/record_probe.sh rowgather OUTDIR     (rowgather_probe.cu)
#   benchmarks/coalescing/record_probe.sh misalign OUTDIR      (misalign_probe.cu)
#   benchmarks/coalescing/record_probe.sh copywalk OUTDIR      (copywalk_probe.cu)
#
# Writes OUTDIR/NAME_list.txt (the configurations, in launch order),
# OUTDIR/NAME_times.txt (median of 5 timed runs each, no profiler),
# OUTDIR/NAME_ncu.csv (ncu --page raw, one launch of each configuration: time,
# unit shares of peak, L1 hit rate, L2 sectors from L1, requests and sectors,
# DRAM bytes) and OUTDIR/device.txt. benchmarks/coalescing/table_NAME.py adds
# them to gpa_lsp/data/coalescing.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
NAME="${1:?usage: record_probe.sh lanewalk|lanewalk_spread|fieldgather|loopfree|overlap|tile|rowgather|misalign|copywalk OUTDIR}"
OUTDIR="${2:?usage: record_probe.sh lanewalk|lanewalk_spread|fieldgather|loopfree|overlap|tile|rowgather|misalign|copywalk OUTDIR}"
case "$NAME" in
  lanewalk|lanewalk_spread) KERNELS='regex:scalar|ell|vector' ;;
  fieldgather) KERNELS='regex:soa|aos' ;;
  loopfree) KERNELS='regex:lf|loop' ;;
  overlap) KERNELS='regex:mix' ;;
  tile) KERNELS='regex:lf|tile|t2d' ;;
  rowgather) KERNELS='regex:gather' ;;
  misalign) KERNELS='regex:copy|s3|t9|h5' ;;
  copywalk) KERNELS='regex:walk' ;;
  *) echo "unknown probe $NAME" >&2; exit 2 ;;
esac
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/${NAME}_probe"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$HERE/${NAME}_probe.cu"
"$BIN" --list > "$OUTDIR/${NAME}_list.txt"
"$BIN" --time > "$OUTDIR/${NAME}_times.txt"
CORE=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
# cache counters: kept only where this ncu knows them (a wrong name fails the whole run)
KNOWN="$(dirname "$BIN")/known.txt"
ncu --query-metrics --chip gh100 > "$KNOWN" 2>&1 || true
METRICS="$CORE"
for m in $(cat "$HERE/cache_metrics.txt"); do
  if grep -qw -- "${m%%.*}" "$KNOWN"; then METRICS="$METRICS,$m"; else echo "skipped $m" >&2; fi
done
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled -k "$KERNELS" "$BIN" > "$OUTDIR/${NAME}_ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/${NAME}_list.txt") $NAME configurations"
