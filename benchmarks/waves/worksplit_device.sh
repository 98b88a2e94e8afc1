#!/usr/bin/env bash
# The one device call of the work-loop split (issue 15): the calibration case kernels/zscore_features
# recorded with both collectors, its strips variant recorded too (recorded/strips/: a grid that
# fills the device, where Block Increase must say nothing), and every variant timed, on the same GPU.
# What comes back under $OUT: bundles.tar (kernels/zscore_features/recorded), timings.json, logs.
#   OUT=... bash benchmarks/waves/worksplit_device.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-/tmp/gpa-out}"; mkdir -p "$OUT"
case=zscore_features
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv,noheader
python3 benchmarks/accuracy/record.py --build-only "$case" > "$OUT/build.log" 2>&1
grep -E "^built|FAILED" "$OUT/build.log"
GPA_RECORD_NO_BUILD=1 GPA_NCU_LAUNCHES=1 bash scripts/gpu/record_case.sh "kernels/$case" > "$OUT/record.log" 2>&1 \
  || echo "== $case: recording FAILED"
# the strips variant recorded beside the original (not as recorded/improved/: at 30 us its CUDA-event
# time is 6 us above the profiled duration, see kernels/zscore_features/README.md): a scratch copy whose original.cu is strips.cu
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/kernels" "kernels/$case/recorded/strips"
cp -r kernels/common "$scratch/kernels/common"
cp -r "kernels/$case" "$scratch/kernels/$case"
rm -rf "$scratch/kernels/$case/build" "$scratch/kernels/$case/.gpa" "$scratch/kernels/$case/recorded"
sed 's|"../../common/harness.cuh"|"../common/harness.cuh"|' "kernels/$case/variants/strips.cu" > "$scratch/kernels/$case/original.cu"
for collector in cupti ncu; do
  extra=(); [ "$collector" = ncu ] && extra=(--no-build --launch-count 1)
  python3 -m gpa_lsp.commands.profile "$scratch/kernels/$case" --collector "$collector" "${extra[@]}" \
    --out "kernels/$case/recorded/strips/$collector.gpabundle" >> "$OUT/record.log" 2>&1 \
    || echo "== $case (strips): $collector FAILED"
done
grep -E "FAILED|cupti .* s" "$OUT/record.log"
ls -l "kernels/$case/recorded" "kernels/$case/recorded/strips"
tar cf "$OUT/bundles.tar" "kernels/$case/recorded"
python3 benchmarks/accuracy/record.py --runs 10 --rounds 3 --out "$OUT/timings.json" "$case" 2>&1 | tee "$OUT/timing.log"
tail -5 "$OUT/record.log"
exit 0
