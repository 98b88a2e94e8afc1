#!/usr/bin/env bash
# Build and run the wave microbenchmark on the GPU machine: one JSON line per timing.
#   bash benchmarks/waves/run.sh OUT.jsonl
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-h100.jsonl}"
nvcc -O3 -arch=sm_90 -o /tmp/gpa_waves waves.cu
/tmp/gpa_waves > "$out"
