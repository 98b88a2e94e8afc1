#!/usr/bin/env bash
# Record kernels/<case>/recorded/{cupti,ncu}.gpabundle on the GPU machine.
#
#   scripts/gpu/record_case.sh kernels/stencil [kernels/other ...]
#
# Needs only python3 (3.11+, standard library + cuda-bindings), nvcc, a C
# compiler, CUPTI (toolkit extras/CUPTI or the nvidia-cuda-cupti wheel) and ncu.
# Each case folder has a gpa.toml. The case is built once (by the CUPTI run);
# the ncu run reuses that build. A failing case is reported and the others go
# on; the exit code is non-zero if any collector failed.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
# ncu's replay is the slow part: 1 launch per kernel unless the case says otherwise
NCU_LAUNCHES="${GPA_NCU_LAUNCHES:-}"
status=0
for dir in "$@"; do
  dir="${dir%/}"
  [ "$(basename "$dir")" = common ] && continue   # shared harness code, not a case
  if [ ! -f "$dir/gpa.toml" ]; then
    echo "== $dir: no gpa.toml, skipped" >&2; status=1; continue
  fi
  mkdir -p "$dir/recorded"
  echo "== $dir"
  start=$(date +%s.%N)
  prebuilt=()
  [ -n "${GPA_RECORD_NO_BUILD:-}" ] && prebuilt=(--no-build)   # built already (benchmarks/accuracy/record.py)
  if ! "$PY" -m gpa_lsp.commands.profile "$dir" --collector cupti "${prebuilt[@]}" --out "$dir/recorded/cupti.gpabundle"; then
    echo "== $dir: CUPTI collector FAILED" >&2; status=1
  fi
  mid=$(date +%s.%N)
  extra=()
  [ -n "$NCU_LAUNCHES" ] && extra=(--launch-count "$NCU_LAUNCHES")
  if ! "$PY" -m gpa_lsp.commands.profile "$dir" --collector ncu --no-build "${extra[@]}" --out "$dir/recorded/ncu.gpabundle"; then
    echo "== $dir: ncu collector FAILED" >&2; status=1
  fi
  end=$(date +%s.%N)
  ls -l "$dir/recorded/" 2>/dev/null | awk 'NR>1 {print "   ", $5, $9}'
  awk -v a="$start" -v b="$mid" -v c="$end" 'BEGIN {printf "   cupti %.1f s (with build), ncu %.1f s\n", b-a, c-b}'
done
exit $status
