#!/usr/bin/env bash
# Time every case (original and improved) on the GPU machine: see record.py.
#   benchmarks/accuracy/record.sh [--runs 20] [--out benchmarks/accuracy/timings.json] [case ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 benchmarks/accuracy/record.py "$@"
