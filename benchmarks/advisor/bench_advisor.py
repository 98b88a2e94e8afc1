"""Advisor wall time: blame + optimizers + estimates + line stats for one kernel.

Two programs:
  * the largest recorded case bundle under kernels/*/recorded (real samples), when one exists,
    else shared/samples/probe.cu with its real Nsight Compute samples (tests/analysis/data);
  * kernels/sw_icache/original.cu (fully unrolled Smith-Waterman, > 20,000 SASS instructions)
    with SYNTHESISED samples on 90% of its instructions (benchmark only: a seeded random mix
    of stall reasons), to time the advisor at a size no recorded case reaches.
The reference measured in the same run is loading the same cubin into a Program
(nvdisasm + parsing), which every analysis pays anyway; the ratio is what to compare.

    python benchmarks/advisor/bench_advisor.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "analysis"))

from gpa_lsp.analysis.advisor import analyze  # noqa: E402
from gpa_lsp.profile.model import Device, Kernel, Launch, PCStats, Profile  # noqa: E402
from gpa_lsp.sass import clear_cache, load_program  # noqa: E402
from gpa_lsp.toolchain import compile_cubin  # noqa: E402

REASONS = [("long_scoreboard", 30), ("short_scoreboard", 10), ("wait", 15), ("no_instructions", 10),
           ("selected", 15), ("not_selected", 5), ("math_pipe_throttle", 5), ("lg_throttle", 5),
           ("barrier", 3), ("branch_resolving", 2)]


def synthetic_profile(program, kernel_name: str, share: float = 0.9, seed: int = 1, grid: int = 1024) -> Profile:
    rng = random.Random(seed)
    fn = program.function(kernel_name)
    names, weights = zip(*REASONS)
    pcs = []
    for f in program.functions:
        if f.section != fn.section:
            continue
        for ins in f.instructions:
            if ins.base_opcode == "NOP" or rng.random() > share:
                continue
            stalls = {}
            for _ in range(rng.randint(1, 4)):
                r = rng.choices(names, weights)[0]
                stalls[r] = stalls.get(r, 0) + rng.randint(1, 200)
            ni = {r: n // 2 for r, n in stalls.items() if r != "selected"}
            pcs.append(PCStats(program.cubin_sha256, kernel_name, ins.offset, tuple(sorted(stalls.items())),
                               tuple(sorted(ni.items()))))
    k = Kernel(kernel_name, fn.demangled, program.cubin_sha256,
               launches=(Launch((grid, 1, 1), (256, 1, 1), registers=fn.registers),))
    return Profile("synthetic", Device("H100", 90, 132), (k,), tuple(pcs))


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench(label: str, cubin: Path, profile_of, repeat: int) -> None:
    clear_cache()
    load_s = timed(lambda: (clear_cache(), load_program(cubin)), repeat)
    program = load_program(cubin)
    profile = profile_of(program)
    n_ins = sum(len(f.instructions) for f in program.functions)
    n_pcs = len(profile.pcs)
    advise_s = timed(lambda: analyze({program.cubin_sha256: program}, profile), repeat)
    print(f"{label}: {n_ins} instructions, {n_pcs} sampled PCs, advisor {advise_s * 1000:.0f} ms "
          f"(median of {repeat}), load_program {load_s * 1000:.0f} ms, ratio advisor/load {advise_s / load_s:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bundles = sorted(ROOT.glob("kernels/*/recorded/*.gpabundle"), key=lambda p: p.stat().st_size)
        if bundles:
            from gpa_lsp.profile.bundle import read_bundle
            b = read_bundle(bundles[-1])
            sha, data = max(b.cubins.items(), key=lambda kv: len(kv[1]))
            cubin = Path(tmp) / "case.cubin"
            cubin.write_bytes(data)
            bench(f"largest recorded case {bundles[-1].relative_to(ROOT)}", cubin, lambda p: b.profile, args.repeat)
        else:
            from probe_data import PROBE_CU, probe_profile
            cubin = compile_cubin(PROBE_CU, Path(tmp) / "probe.cubin", flags=("-O3",))
            bench("probe.cu with real H100 samples", cubin, probe_profile, args.repeat)
        src = ROOT / "kernels" / "sw_icache" / "original.cu"
        cubin = compile_cubin(src, Path(tmp) / "sw.cubin", flags=("-O3",))
        prog = load_program(cubin)
        big = max((f for f in prog.functions if f.entry), key=lambda f: len(f.instructions))
        bench(f"sw_icache original ({big.demangled.split('(')[0]}) with synthesised samples", cubin,
              lambda p: synthetic_profile(p, big.name), args.repeat)


if __name__ == "__main__":
    main()
