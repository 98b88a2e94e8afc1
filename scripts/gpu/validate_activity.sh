#!/usr/bin/env bash
# Device check of the CUPTI collector's launch records (kernel activity: registers, shared
# memory, durations), periodic drains and several contexts. Run through the `run` tool:
#   bash scripts/gpu/validate_activity.sh        # writes $OUT/results.tgz and $OUT/log.txt
# Records kernels/hotspot_double into a temporary copy (the committed recorded/ bundles are
# left alone) and compares its launches with recorded/ncu.gpabundle; runs two_contexts.cu
# with every drain/activity/sampling switch so a failure can be pinned on one of them.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
cd "$REPO"
out_dir /tmp/gpa-out
W=/tmp/gpa-activity; rm -rf "$W"; mkdir -p "$W/kernels"
{
  device_line
  LIB=$(python3 -m gpa_lsp.profile.cupti.builder | tail -1); echo "library: $LIB"
  CUPTI_DIR=$(python3 -c 'from gpa_lsp.profile.cupti.builder import find_cupti; print(find_cupti().libdir)')
  nvcc -O3 -arch=sm_90 -lineinfo -o "$W/two_contexts" scripts/gpu/two_contexts.cu || echo "nvcc failed"
  for v in default DRAIN_MS=0 NO_ACTIVITY=1 NO_PCSAMPLING=1; do
    echo "== two contexts: $v"
    mkdir -p "$W/two-$v"
    extra=(); [ "$v" != default ] && extra=("GPA_CUPTI_$v")
    env "${extra[@]}" CUDA_INJECTION64_PATH="$LIB" GPA_CUPTI_OUT="$W/two-$v" GPA_CUPTI_SAMPLING_PERIOD=14 \
      LD_LIBRARY_PATH="$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 "$W/two_contexts"
    echo "rc=$?"
    grep "^[VQXYEKBC]" "$W/two-$v/cupti.txt" | cut -c1-160
    for ctx in $(grep "^[RD]" "$W/two-$v/cupti.txt" | cut -d' ' -f2 | sort -u); do
      echo "ctx $ctx: R $(grep -c "^R $ctx " "$W/two-$v/cupti.txt") P $(grep -c "^P $ctx " "$W/two-$v/cupti.txt") T-sum $(grep "^T $ctx " "$W/two-$v/cupti.txt" | awk '{s+=$3} END {print s+0}')"
    done
  done
  tar czf "$W/two-raw.tgz" -C "$W" two-default

  echo "== hotspot_double (temporary copy)"
  cp -r kernels/hotspot_double kernels/common "$W/kernels/"; rm -rf "$W/kernels/hotspot_double/build"
  H="$W/kernels/hotspot_double"
  GPA_KEEP_CUPTI_OUT="$W/hot-raw" timeout 120 python3 -m gpa_lsp.commands.profile "$H" --collector cupti \
    --out "$W/hotspot_double.cupti.gpabundle"
  GPA_CUPTI_NO_ACTIVITY=1 timeout 120 python3 -m gpa_lsp.commands.profile "$H" --collector cupti --no-build \
    --out "$W/hotspot_double.noact.gpabundle" >/dev/null
  ( cd "$H" && for i in 1 2 3; do /usr/bin/time -f "bare %e s" build/original --quick >/dev/null; done )
  grep -c "^K" "$W/hot-raw/cupti.txt"; grep "^[VQXYEBC]" "$W/hot-raw/cupti.txt"
  gzip -c "$W/hot-raw/cupti.txt" > "$W/hotspot_double.cupti.txt.gz"
  python3 - "$W" <<'PY'
import sys, statistics
from gpa_lsp.profile.bundle import read_bundle
w = sys.argv[1]
c = read_bundle(f"{w}/hotspot_double.cupti.gpabundle"); n = read_bundle("kernels/hotspot_double/recorded/ncu.gpabundle")
for b, tag in ((c, "cupti"), (n, "ncu")):
    for k in b.profile.kernels:
        d = [l.duration_ns for l in k.launches if l.duration_ns]
        print(tag, k.name, "launches", len(k.launches), "first", k.launches[0] if k.launches else None,
              "duration median", statistics.median(d) if d else None, "min", min(d) if d else None, "max", max(d) if d else None)
na = read_bundle(f"{w}/hotspot_double.noact.gpabundle")
print("harness wall: with activity", c.manifest.get("harness_wall_s"), "without", na.manifest.get("harness_wall_s"))
print("samples: with activity", c.profile.total_samples, "without", na.profile.total_samples)
PY
} 2>&1 | tee "$W/log.txt"
cd "$W" && tar czf "$OUT/results.tgz" log.txt two-raw.tgz $(ls hotspot_double.* 2>/dev/null)
cp "$W/log.txt" "$OUT/log.txt"
