#!/usr/bin/env bash
# The counters run with the launch's amounts (DRAM bytes, duration, clock: throughput.AMOUNTS) on the
# GPU machine, one call: the counters run on every kernels/ case (counters_cases.json: re-records
# tests/profile/fixtures/counters.h100.json.gz through benchmarks/profiling/counters_fixture.py), the
# replay's cost with and without the amounts on probe (replay.json), the host's pass counts by the
# device's Perfworks (passes.json), and particle_gather and saxpy_stream against the ncu pass in the
# same session (same_session.json); log.txt.
#   bash scripts/gpu/counters_amounts.sh
set -u
. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
out_dir /tmp/collector-out
{
  device_ready
  echo "== counters run, every case"
  timeout 115 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/counters_cases.json"
  echo "== replay cost"
  timeout 30 python3 benchmarks/profiling/replay_cost.py --json "$OUT/replay.json"
  echo "== passes"
  timeout 15 python3 benchmarks/profiling/passes_on_device.py --json "$OUT/passes.json"
  echo "== same session, ncu"
  timeout 25 python3 benchmarks/profiling/counters_vs_ncu.py "$OUT/same_session.json" kernels/particle_gather \
    kernels/saxpy_stream --ncu
} 2>&1 | tee "$OUT/log.txt"
