#!/usr/bin/env bash
# On the GPU machine: build batch_probe.cu, time every configuration and run it once under ncu.
#
#   benchmarks/restrict/record_batch.sh OUTDIR
#
# Writes OUTDIR/batch_{list,times}.txt, OUTDIR/batch_ncu.csv (units' shares of peak, DRAM bytes, L2
# sectors from L1, warps active) and OUTDIR/device.txt (benchmarks/probe_run.sh); table_batch.py turns
# them into batch_<device>.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
exec bash "$HERE/../probe_run.sh" "$HERE/batch_probe.cu" batch 'map|soft|col' "${1:?usage: record_batch.sh OUTDIR}" \
  dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex.sum,smsp__warps_active.avg.per_cycle_active
