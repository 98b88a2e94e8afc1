#!/usr/bin/env bash
# Record examples/{make_project,cmake_project,python_harness}/recorded/{cupti,ncu}.gpabundle on the
# GPU machine.
#
#   scripts/gpu/record_projects.sh
#
# Needs only python3 (3.11+, standard library + cuda-bindings), nvcc, make, cmake, a C
# compiler, CUPTI (toolkit extras/CUPTI or the nvidia-cuda-cupti wheel), NVRTC (the toolkit's or
# the nvidia-cuda-nvrtc wheel) and ncu. Each example is built from clean by its own build ([build]
# command: make, CMake, with -lineinfo added by gpa through NVCC_APPEND_FLAGS; [build] sources:
# nvcc -cubin for the Python harness); the CUPTI run builds, the ncu run (--no-build) reads the
# cubins from [build] output, and those the Python harness compiles with NVRTC when it runs from
# one run under the CUPTI injection library. Then each bundle is checked for line information and
# for every kernel its gpa.toml names. Exit code non-zero if any collector failed, a bundle has no
# line information or misses a kernel.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
cd "$REPO"
EXAMPLES=(${GPA_EXAMPLES:-examples/make_project examples/cmake_project examples/python_harness})
for tool in make cmake nvcc; do
  command -v "$tool" >/dev/null || { echo "== $tool is not on PATH: cannot build the examples" >&2; exit 2; }
done
"$PY" -m gpa_lsp.commands.doctor || true       # what this machine has, for the log
status=0
for dir in "${EXAMPLES[@]}"; do
  rm -rf "$dir/build" "$dir/recorded"           # a clean build: every nvcc runs with -lineinfo
done
"$REPO/scripts/gpu/record_case.sh" "${EXAMPLES[@]}" || status=1
for dir in "${EXAMPLES[@]}"; do
  for c in cupti ncu; do
    b="$dir/recorded/$c.gpabundle"
    [ -f "$b" ] || { echo "== $b: missing" >&2; status=1; continue; }
    if ! "$PY" - "$b" <<'PY'
import sys
from pathlib import Path
from gpa_lsp.config import load
from gpa_lsp.profile.bundle import read_bundle
from gpa_lsp.profile.collect import line_info_note
b = read_bundle(sys.argv[1])
note = line_info_note(sys.argv[1])
kernels = ", ".join(f"{k.demangled or k.name} ({len(k.launches)} launches)" for k in b.profile.kernels)
missing = [n for n in load(Path(sys.argv[1]).parent.parent).profile.kernels
           if not any(n in (k.demangled or k.name) for k in b.profile.kernels)]
print(f"== {sys.argv[1]}: {b.profile.total_samples} samples; {kernels}; "
      + ("line info ok" if note is None else "NO LINE INFO: " + note)
      + (f"; MISSING KERNELS: {', '.join(missing)}" if missing else ""))
sys.exit(0 if note is None and not missing and b.profile.total_samples > 0 else 1)
PY
    then status=1; fi
  done
done
exit $status
