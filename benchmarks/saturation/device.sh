#!/usr/bin/env bash
# The one device call of issue 15's block-increase work: what bounds more warps per SM on the
# calibration cases particle_blocks and dot_runtime_unroll. (1) placement.cu: do blocks that get
# work spread over the SMs when most of a full wave has none; (2) ncu on the cases' original and
# full-wave variants: the breakdown of the SM's and the L1's throughput (which sub-unit binds),
# issue, warps, and the pipes' utilisation. Writes under $OUT: placement.jsonl, ncu.tar (m_*.csv: metrics, b_*.csv: breakdowns, *.err).
#   OUT=... bash benchmarks/saturation/device.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpa-out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv,noheader
B="$(mktemp -d)"
nvcc -O3 -arch=sm_90 -o "$B/placement" benchmarks/saturation/placement.cu &
for c in particle_blocks dot_runtime_unroll; do
  nvcc -O3 -arch=sm_90 -o "$B/${c}_original" kernels/$c/original.cu &
  nvcc -O3 -arch=sm_90 -o "$B/${c}_full_grid" kernels/$c/variants/full_grid.cu &
done
nvcc -O3 -arch=sm_90 -o "$B/particle_blocks_fix" kernels/particle_blocks/improved.cu &
wait
ls "$B"
"$B/placement" | tee "$OUT/placement.jsonl"
NCU="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
echo "ncu: $NCU"
BD="breakdown:sm__throughput.avg.pct_of_peak_sustained_active,breakdown:l1tex__throughput.avg.pct_of_peak_sustained_active"
M="smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,sm__cycles_active.avg"
M="$M,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active"
M="$M,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
M="$M,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active"
M="$M,smsp__inst_executed.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
M="$M,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"
M="$M,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"
M="$M,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"
M="$M,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio"
M="$M,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio"
for exe in particle_blocks_original particle_blocks_full_grid particle_blocks_fix dot_runtime_unroll_original dot_runtime_unroll_full_grid; do
  timeout 100 "$NCU" --launch-count 1 --clock-control none --metrics "$M" --csv --page raw "$B/$exe" --runs 1 \
    > "$B/m_$exe.csv" 2> "$B/m_$exe.err" || { echo "ncu $exe FAILED"; tail -3 "$B/m_$exe.err"; }
  timeout 100 "$NCU" --launch-count 1 --clock-control none --metrics "$BD" --csv --page raw "$B/$exe" --runs 1 \
    > "$B/b_$exe.csv" 2> "$B/b_$exe.err" || { echo "ncu breakdown $exe FAILED"; tail -3 "$B/b_$exe.err"; }
  "$B/$exe" --runs 10 2>&1 | tail -1
done
# at most 8 files come back: one tar of the ncu outputs
tar cf "$OUT/ncu.tar" -C "$B" $(cd "$B" && ls m_* b_*)
exit 0
