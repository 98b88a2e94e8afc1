#!/usr/bin/env bash
# Build and run the atomics microbenchmark on the GPU machine: one JSON line per timing.
#   bash benchmarks/atomics/run.sh OUT.jsonl
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-h100.jsonl}"
nvcc -O3 -arch=sm_90 -o /tmp/gpa_atomics atomics.cu
/tmp/gpa_atomics > "$out"
