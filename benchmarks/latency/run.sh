#!/usr/bin/env bash
# Build latency.cu for sm_90 and run it on the GPU machine; the JSON goes to
# $OUT/latency.h100.json (or ./latency.h100.json when OUT is unset).
# Needs nvcc and cuobjdump (CUDA toolkit) and python3 (standard library only).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here}"
work="$(mktemp -d)"
nvcc -O3 -arch=sm_90 -lineinfo -o "$work/latency" "$here/latency.cu"
# fixed stall cycles of the special-register loops, read from the binary's own SASS
read -r s2ur_tail s2r_tail unused base_stalls < <(cuobjdump -sass "$work/latency" | python3 "$here/sreg_loop.py")
cuobjdump -sass "$work/latency" > "$out/latency.sass.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > "$out/gpu.txt" || true
"$work/latency" "$s2ur_tail" "$s2r_tail" "$unused" "$base_stalls" > "$out/latency.h100.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d, indent=1))' "$out/latency.h100.json"
