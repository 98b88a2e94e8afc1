#!/usr/bin/env bash
# On the GPU machine: build prefetch_probe.cu, time every configuration and run it once under ncu.
#
#   benchmarks/reorder/record.sh OUTDIR
#
# Writes OUTDIR/prefetch_{list,times}.txt, OUTDIR/prefetch_ncu.csv (issue share, warp instructions
# executed, warps active) and OUTDIR/device.txt (benchmarks/probe_run.sh); table.py turns them into
# prefetch_<device>.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
exec bash "$HERE/../probe_run.sh" "$HERE/prefetch_probe.cu" prefetch taps "${1:?usage: record.sh OUTDIR}" \
  smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active
