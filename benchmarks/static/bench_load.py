"""Speed of the static side: load_program vs nvdisasm alone on the same large cubin, in the same run.

    python benchmarks/static/bench_load.py [--kernels 8] [--repeat 5] [--arch sm_90]

Builds (with nvcc, into a temp dir) a cubin of many template-instantiated,
heavily unrolled kernels (>= 20,000 instructions), then times
 * reference: `nvdisasm -c -gi` (the one nvdisasm pass load_program makes), and
   plain `nvdisasm -c` for information;
 * load_program: ELF + nvdisasm + parse + operands + control codes + CFG + loops,
   with the program cache cleared before every repetition.
Prints the median times, the ratio load_program / nvdisasm, and peak memory
(tracemalloc peak of the Python side; max RSS of the nvdisasm child).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.sass import clear_cache, load_program  # noqa: E402
from gpa_lsp.toolchain import compile_cubin, find_tool  # noqa: E402

KERNEL = r"""
template <int N>
__device__ __forceinline__ float step(float x, float y) { return x * y + (float)N; }

template <int N>
__global__ void stencil(const float* __restrict__ a, float* b, const float* __restrict__ w, int n, int m) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    float acc = 0.0f;
    for (int r = 0; r < m; ++r) {
        #pragma unroll
        for (int i = 0; i < 96; ++i) {
            acc = step<N>(acc, a[(t + i * N + r * n) % n] * w[i]);
        }
        #pragma unroll 4
        for (int j = 0; j < n; ++j) acc += a[j] * (float)(N + j);
    }
    b[t] = acc;
}
"""


def make_source(kernels: int) -> str:
    inst = "".join(f"template __global__ void stencil<{k + 1}>(const float*, float*, const float*, int, int);\n"
                   for k in range(kernels))
    return KERNEL + inst


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    nvdisasm = find_tool("nvdisasm")
    with tempfile.TemporaryDirectory(prefix="gpa-bench-") as tmp:
        src = Path(tmp) / "big.cu"
        src.write_text(make_source(args.kernels))
        cubin = compile_cubin(src, Path(tmp) / "big.cubin", arch=args.arch)
        size = cubin.stat().st_size

        def run_nvdisasm(flags):
            t0 = time.perf_counter()
            subprocess.run([nvdisasm, *flags, str(cubin)], check=True, capture_output=True)
            return time.perf_counter() - t0

        def run_load():
            clear_cache()
            t0 = time.perf_counter()
            load_program(cubin)
            return time.perf_counter() - t0

        # interleaved, so that load on a shared machine hits both sides alike
        ref_times, plain_times, times = [], [], []
        for _ in range(args.repeat):
            ref_times.append(run_nvdisasm(["-c", "-gi"]))
            times.append(run_load())
            plain_times.append(run_nvdisasm(["-c"]))
        ref_gi, ref_plain, ours = (statistics.median(x) for x in (ref_times, plain_times, times))
        child_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        clear_cache()
        tracemalloc.start()
        program = load_program(cubin)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

    n_ins = sum(len(f.instructions) for f in program.functions)
    n_loops = sum(len(f.loops) for f in program.functions)
    print(f"cubin: {args.arch}, {size / 1e6:.2f} MB, {len(program.functions)} functions, "
          f"{n_ins} instructions, {n_loops} loops")
    print(f"nvdisasm -c -gi (reference): {ref_gi * 1000:8.1f} ms   (max RSS of nvdisasm children "
          f"{child_rss_kb / 1024:.0f} MiB)")
    print(f"nvdisasm -c                : {ref_plain * 1000:8.1f} ms")
    print(f"load_program               : {ours * 1000:8.1f} ms   (Python peak {peak / 2**20:.1f} MiB)")
    print(f"ratio load_program / nvdisasm -c -gi: {ours / ref_gi:.2f}x   (target <= 2x)")
    print(f"ratio load_program / nvdisasm -c    : {ours / ref_plain:.2f}x")
    print(f"best-of-{args.repeat} ratio (min/min) vs -c -gi: {min(times) / min(ref_times):.2f}x")
    if n_ins < 20000:
        print(f"warning: only {n_ins} instructions; raise --kernels", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
