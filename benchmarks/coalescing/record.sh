#!/usr/bin/env bash
# Measure what uncoalesced accesses cost on the GPU machine (coalesce_probe.cu):
#
#   benchmarks/coalescing/record.sh OUTDIR
#
# Writes OUTDIR/list.txt (the configurations, in launch order), OUTDIR/times.txt
# (median of 5 timed runs each, no profiler), OUTDIR/ncu.csv (ncu --page raw, one
# launch each: time, sectors and requests, L1/L2/DRAM share of peak) and
# OUTDIR/device.txt. benchmarks/coalescing/table.py turns them into
# gpa_lsp/data/coalescing.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="${1:?usage: record.sh OUTDIR}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/coalesce_probe"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$HERE/coalesce_probe.cu"
"$BIN" --list > "$OUTDIR/list.txt"
"$BIN" --time > "$OUTDIR/times.txt"
CORE=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
# counters beyond the throughput pass: kept only where this ncu knows them (a wrong name fails the whole run)
EXTRA="l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
lts__t_sectors_srcunit_tex.sum l1tex__t_sector_hit_rate.pct lts__t_sector_hit_rate.pct
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum l1tex__data_pipe_lsu_wavefronts.sum
l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum l1tex__m_xbar2l1tex_read_sectors.sum
smsp__inst_executed.sum smsp__thread_inst_executed.sum sm__warps_active.avg.pct_of_peak_sustained_active"
KNOWN="$(dirname "$BIN")/known.txt"
ncu --query-metrics --chip gh100 > "$KNOWN" 2>&1 || true
METRICS="$CORE"
if [ "$(grep -c '__' "$KNOWN")" -lt 100 ]; then   # no list: the counters every ncu of this decade has
  EXTRA="l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
  for m in $EXTRA; do METRICS="$METRICS,$m"; done
  EXTRA=""
fi
for m in $EXTRA; do
  if grep -qw -- "${m%%.*}" "$KNOWN"; then METRICS="$METRICS,$m"; else echo "skipped $m" >&2; fi
done
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled "$BIN" > "$OUTDIR/ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/list.txt") configurations"
