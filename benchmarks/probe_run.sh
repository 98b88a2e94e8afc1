#!/usr/bin/env bash
# On the GPU machine: build one probe, list its configurations, time them and run each once under ncu.
#
#   benchmarks/probe_run.sh SOURCE.cu NAME KERNEL_REGEX OUTDIR [EXTRA_METRICS]
#
# The probe answers `--list` (one line per configuration, in launch order) and `--time` (median of 5
# timed runs each), and with no argument runs every configuration once. Writes OUTDIR/NAME_list.txt,
# OUTDIR/NAME_times.txt, OUTDIR/NAME_ncu.csv (ncu --page raw: the unit throughputs gpa reads, plus
# EXTRA_METRICS, comma-separated) and OUTDIR/device.txt. Used by benchmarks/restrict/record_batch.sh
# and benchmarks/reorder/record.sh.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${1:?usage: probe_run.sh SOURCE.cu NAME KERNEL_REGEX OUTDIR [EXTRA_METRICS]}"
NAME="${2:?usage}"
REGEX="${3:?usage}"
OUTDIR="${4:?usage}"
EXTRA="${5:-}"
mkdir -p "$OUTDIR"
BIN="$(mktemp -d)/$NAME"
nvcc -O3 -arch=sm_90 -lineinfo -o "$BIN" "$SRC"
"$BIN" --list > "$OUTDIR/${NAME}_list.txt"
"$BIN" --time > "$OUTDIR/${NAME}_times.txt"
METRICS=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
[ -n "$EXTRA" ] && METRICS="$METRICS,$EXTRA"
ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base \
    --print-kernel-base mangled -k "regex:$REGEX" "$BIN" > "$OUTDIR/${NAME}_ncu.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUTDIR/device.txt"
echo "recorded $(wc -l < "$OUTDIR/${NAME}_list.txt") $NAME configurations"
