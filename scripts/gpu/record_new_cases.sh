#!/usr/bin/env bash
# Record, time and verify kernels/ cases on the GPU machine in one call, results in one tarball.
#
#   scripts/gpu/record_new_cases.sh [--record | --time] CASE [CASE ...]   (OUT: where the tarball goes)
#
# --record: the recordings and the counters run only; --time: the timings and `gpa verify` only
# (on the recorded/ bundles already in the cases); neither: all of it (a device call is limited
# to 10 minutes: three cases take about that, so split them).
#
# Per case: both collectors (record_case.sh; ncu with the default launch count, so a harness's
# relaunches are in the profile), the CUPTI counters run (counters_vs_ncu.py, for
# tests/profile/test_counters.py), every variant timed by events and kernel durations
# (record.py --durations, 3 interleaved rounds), then `gpa verify` on the top 3 fixes
# (benchmarks/verify/run.py; results stored in the recorded bundles). Brings back
# OUT/new_cases.tgz: the cases' recorded/ folders, timings.json, verify.json, counters.json, log.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/new_cases_out
cd "$REPO"
steps=all
case "${1:-}" in --record) steps=record; shift ;; --time) steps=time; shift ;; esac
work="$(mktemp -d)"
log="$work/log.txt"
dirs=(); for c in "$@"; do dirs+=("kernels/$c"); done
{
  device_ready
  if [ "$steps" != time ]; then
    bash scripts/gpu/record_case.sh "${dirs[@]}"
    "$PY" benchmarks/profiling/counters_vs_ncu.py "$work/counters.json" "${dirs[@]}"
  fi
  if [ "$steps" != record ]; then
    "$PY" benchmarks/accuracy/record.py --durations --rounds 3 --out "$work/timings.json" "$@"
    "$PY" benchmarks/verify/run.py --out "$work/verify.json" "$@"
  fi
} > "$log" 2>&1
echo "rc of the last step: $?" >> "$log"
for c in "$@"; do mkdir -p "$work/kernels/$c" && cp -r "kernels/$c/recorded" "$work/kernels/$c/"; done
tar -C "$work" -czf "$OUT/new_cases.tgz" .
tail -60 "$log"
