#!/usr/bin/env bash
# Issue 17's editor target on the GPU machine: save -> diagnostics minus the build, 0.45 s harness
# (benchmarks/profiling/probe), through the real server (benchmarks/editor/bench_save_latency.py).
# The server's packages are not on the GPU machine: fetch their wheels here first, into the
# gitignored .whl/ of the repository root, and name .whl in the run's carry:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl pygls lsprotocol==2025.0.0 cattrs pyelftools watchdog tree-sitter tree-sitter-cuda
# (networkx, attrs, cuda-bindings and the CUDA tools are there already.) Then, on the GPU machine:
#   bash scripts/gpu/editor_latency.sh        # writes $OUT/editor_latency.json; about 40 s
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
out_dir /tmp/editor-out
timeout 240 python3 benchmarks/editor/bench_save_latency.py benchmarks/profiling/probe --saves 4 \
  --json "$OUT/editor_latency.json" 2>&1 | tee "$OUT/editor_latency.log"
