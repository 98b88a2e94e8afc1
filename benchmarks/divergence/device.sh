#!/usr/bin/env bash
# The one device call of the control-flow work (issue 15): benchmarks/divergence/items.cu (a thread
# per item against a warp per item) and benchmarks/banks/banks.cu (tree steps with bank conflicts),
# timed; then ncu's shared-memory counters and source page for some bank configurations.
#   OUT=... bash benchmarks/divergence/device.sh
# Writes $OUT/items.h100.jsonl, $OUT/banks.h100.jsonl, $OUT/banks_ncu.csv, $OUT/banks_source_*.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpa-out}"; mkdir -p "$OUT"
B="$(mktemp -d)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader | tee "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -lineinfo -o "$B/items" benchmarks/divergence/items.cu || echo "items build FAILED"
nvcc -O3 -arch=sm_90 -lineinfo -o "$B/banks" benchmarks/banks/banks.cu || echo "banks build FAILED"
timeout 150 "$B/items" > "$OUT/items.h100.jsonl" 2> "$OUT/items.err" || echo "items FAILED"
cat "$OUT/items.h100.jsonl"
timeout 90 "$B/banks" > "$OUT/banks.h100.jsonl" 2> "$OUT/banks.err" || echo "banks FAILED"
cat "$OUT/banks.h100.jsonl"
M="l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
M="$M,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum"
M="$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
M="$M,smsp__thread_inst_executed_pred_on.sum,smsp__inst_executed.sum,gpu__time_duration.sum"
for cfg in "1 512 0" "2 256 0" "4 128 0" "8 64 0" "16 32 0" "16 16 0" "1 16 0" "4 0 0" "4 128 1" "16 32 1"; do
  set -- $cfg
  echo "== s=$1 active=$2 pad=$3" >> "$OUT/banks_ncu.csv"
  timeout 60 ncu --metrics "$M" --clock-control none --csv --page raw --print-units base \
      "$B/banks" --one "$1" "$2" "$3" >> "$OUT/banks_ncu.csv" 2>> "$OUT/ncu.err" || echo "ncu $cfg FAILED"
done
for cfg in "2 256 0" "16 32 0"; do
  set -- $cfg
  timeout 60 ncu --section SourceCounters --clock-control none -f -o "$B/src_$1_$2" \
      "$B/banks" --one "$1" "$2" "$3" > /dev/null 2>> "$OUT/ncu.err" || echo "ncu source $cfg FAILED"
  ncu --import "$B/src_$1_$2.ncu-rep" --page source --csv --print-source sass > "$OUT/banks_source_s$1_a$2.csv" 2>> "$OUT/ncu.err"
done
grep -c . "$OUT"/banks_ncu.csv; ls -la "$OUT"
exit 0
