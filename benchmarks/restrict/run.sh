#!/usr/bin/env bash
# On the GPU machine: build and run the restrict microbenchmark; JSON lines on stdout.
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -arch=sm_90 -o /tmp/gpa_restrict_bench restrict.cu
/tmp/gpa_restrict_bench
