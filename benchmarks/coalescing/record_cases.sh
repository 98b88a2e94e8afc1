#!/usr/bin/env bash
# Unit throughput of each coalescing case before and after its change, on the GPU machine:
#
#   benchmarks/coalescing/record_cases.sh OUTDIR CASE:VARIANT...
#
# Builds kernels/CASE/original.cu and kernels/CASE/variants/VARIANT.cu (VARIANT
# "improved": kernels/CASE/improved.cu), runs each
# (--quick) under one ncu throughput pass of the case's kernel (the metrics of
# gpa_lsp/profile/throughput.py, and the cache counters of cache_metrics.txt), and writes OUTDIR/cases.csv. A diagnosis of
# where the estimate goes wrong (which unit limits the coalesced code), not an
# input of the model: validation cases set no constant (kernels/README.md).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="${1:?usage: record_cases.sh OUTDIR CASE:VARIANT...}"; shift
BINS="$(mktemp -d)"
mkdir -p "$OUTDIR"
METRICS=$(PYTHONPATH="$REPO" python3 -c 'from gpa_lsp.profile.throughput import METRICS; print(",".join(METRICS))')
# with the cache counters (L1 hit rate, L2 sectors from L1) where this ncu knows them
ncu --query-metrics --chip gh100 > "$BINS/known.txt" 2>&1 || true
for m in $(cat "$HERE/cache_metrics.txt"); do
  if grep -qw -- "${m%%.*}" "$BINS/known.txt"; then METRICS="$METRICS,$m"; fi
done
for cv in "$@"; do
  c="${cv%%:*}"; v="${cv#*:}"
  nvcc -O3 -arch=sm_90 -lineinfo -o "$BINS/$c.original" "$REPO/kernels/$c/original.cu" &
  src="$REPO/kernels/$c/variants/$v.cu"; [ "$v" = improved ] && src="$REPO/kernels/$c/improved.cu"
  nvcc -O3 -arch=sm_90 -lineinfo -o "$BINS/$c.$v" "$src" &
done
wait
: > "$OUTDIR/cases.csv"
for cv in "$@"; do
  c="${cv%%:*}"; v="${cv#*:}"
  k=$(python3 -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))["kernel"])' "$REPO/kernels/$c/case.toml")
  for b in original "$v"; do
    echo "## $c $b" >> "$OUTDIR/cases.csv"
    ncu --metrics "$METRICS" --clock-control none --csv --page raw --print-units base --print-kernel-base mangled \
        -k "regex:$k" --launch-skip 1 --launch-count 1 "$BINS/$c.$b" --quick >> "$OUTDIR/cases.csv" 2>> "$OUTDIR/cases.err"
  done
done
rm -rf "$BINS"
