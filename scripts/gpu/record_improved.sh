#!/usr/bin/env bash
# Record each case's *improved* variant with both collectors, for checking the advice against what
# the change really did to the samples (benchmarks/accuracy/compare.py).
#
#   scripts/gpu/record_improved.sh OUTDIR kernels/<case> [...]
#
# Each case is copied to a scratch folder with improved.cu in place of original.cu, so its gpa.toml
# builds and runs the improved program unchanged; bundles go to OUTDIR/<case>/{cupti,ncu}.gpabundle.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUTDIR="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cp -r "$REPO/kernels/common" "$SCRATCH/common"
status=0
for dir in "$@"; do
  dir="${dir%/}"; name="$(basename "$dir")"
  [ -f "$dir/improved.cu" ] || continue
  work="$SCRATCH/$name"
  rm -rf "$work"; cp -r "$dir" "$work"; rm -rf "$work/build" "$work/.gpa"
  cp "$dir/improved.cu" "$work/original.cu"
  mkdir -p "$OUTDIR/$name"
  echo "== $name (improved)"
  "$PY" -m gpa_lsp.commands.profile "$work" --collector cupti --out "$OUTDIR/$name/cupti.gpabundle" || status=1
  "$PY" -m gpa_lsp.commands.profile "$work" --collector ncu --no-build --launch-count 1 --out "$OUTDIR/$name/ncu.gpabundle" || status=1
done
exit $status
