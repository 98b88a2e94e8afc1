#!/usr/bin/env bash
# One device call for the case library: build every program of every case (parallel nvcc), record
# both collectors' bundles for the cases that have none, then time every program (interleaved
# rounds, benchmarks/accuracy/record.py). What comes back is under $OUT: bundles.tar (the new
# recordings), timings.json, and the logs.
#   OUT=... scripts/gpu/record_library.sh [--budget SECONDS] [--rounds N] [--skip-record]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
cd "$REPO"
out_dir /tmp/gpa-out
budget=300; rounds=1; record=1
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --skip-record) record=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
new=()
if [ "$record" = 1 ]; then
  for d in kernels/*/; do
    d="${d%/}"
    [ -f "$d/case.toml" ] && [ ! -f "$d/recorded/cupti.gpabundle" ] && new+=("$d")
  done
fi
# the originals first (the recordings need them), every variant in the background meanwhile:
# nvcc is CPU work, PC sampling and ncu's replay measure the GPU
python3 benchmarks/accuracy/record.py --build-only --originals > "$OUT/build0.log" 2>&1 || true
python3 benchmarks/accuracy/record.py --build-only --jobs 12 > "$OUT/build.log" 2>&1 &
builder=$!
if [ ${#new[@]} -gt 0 ]; then
  echo "recording ${#new[@]} case(s): ${new[*]}"
  rm -f "$OUT/bundles.tar"
  for d in "${new[@]}"; do      # one case at a time, appended to the tar: a call cut short keeps what it recorded
    if [ -n "${RECORD_BUDGET:-}" ] && [ $(( $(date +%s) - start )) -gt "$RECORD_BUDGET" ]; then
      echo "== $d: not recorded (RECORD_BUDGET)"; continue
    fi
    GPA_RECORD_NO_BUILD=1 GPA_NCU_LAUNCHES=1 bash scripts/gpu/record_case.sh "$d" >> "$OUT/record.log" 2>&1
    tar rf "$OUT/bundles.tar" $(ls "$d"/recorded/*.gpabundle 2>/dev/null) 2>/dev/null
  done
  grep -E "FAILED|not recorded|cupti .* s \(with build\)" "$OUT/record.log" | head -60
fi
wait $builder
grep -E "^built|BUILD FAILED" "$OUT/build0.log" "$OUT/build.log" | head -40
left=$(( budget - ($(date +%s) - start) ))
echo "timing with ${left} s left"
python3 benchmarks/accuracy/record.py --runs 10 --rounds "$rounds" --budget "$left" --out "$OUT/timings.json" > "$OUT/timing.log" 2>&1
grep -E "FAIL|wrote" "$OUT/timing.log" | head -40
exit 0
