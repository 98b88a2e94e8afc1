#!/usr/bin/env bash
# The one device call of the atomics work (issue 15): the microbenchmark, then the calibration case
# kernels/radix_digit_count recorded with both collectors and timed (original and every variant),
# on the same GPU. What comes back under $OUT: h100.jsonl, bundles.tar, timings.json, logs.
#   OUT=... bash benchmarks/atomics/device.sh [case ...]   (default case: radix_digit_count)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/gpa-out}"; mkdir -p "$OUT"
cases=("${@:-radix_digit_count}")
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv,noheader
python3 benchmarks/accuracy/record.py --build-only "${cases[@]}" > "$OUT/build.log" 2>&1 &
builder=$!
bash benchmarks/atomics/run.sh "$OUT/h100.jsonl" 2> "$OUT/atomics.err" || echo "atomics microbenchmark FAILED"
cat "$OUT/h100.jsonl"
wait $builder; grep -E "^built|FAILED" "$OUT/build.log"
rm -f "$OUT/bundles.tar"
for c in "${cases[@]}"; do
  GPA_RECORD_NO_BUILD=1 GPA_NCU_LAUNCHES=1 bash scripts/gpu/record_case.sh "kernels/$c" >> "$OUT/record.log" 2>&1 \
    || echo "== $c: recording FAILED"
  tar rf "$OUT/bundles.tar" kernels/"$c"/recorded/*.gpabundle
done
grep -E "FAILED|cupti .* s" "$OUT/record.log"
python3 benchmarks/accuracy/record.py --runs 10 --rounds 3 --out "$OUT/timings.json" "${cases[@]}" 2>&1 | tee "$OUT/timing.log"
exit 0
