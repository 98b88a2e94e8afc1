// What a shared-memory tile costs a coalesced loop-free kernel: the barrier between each warp's
// loads and its stores.
//
// When a kernel reads along one index and writes along another (a transpose, a layout change),
// no mapping of threads coalesces both accesses: the fix stages the data through a shared-memory
// tile, each warp reading a line of the input, a block barrier, each warp writing a line of the
// output from the tile. Coalesced, both accesses are the loop-free probe's (loopfree_probe.cu):
// one line per warp. What the tile adds is the barrier: no warp of the block stores (and
// exits) before the block's slowest load has arrived, so a block's warps leave together and the
// SM's loads in flight come in waves. Is the DRAM share such a kernel pulls the loop-free one's
// at the same bytes in flight per SM, or less, and how much less with blocks of 256 and 1024?
//
//   lf_bB_mM     loop-free, no tile: thread t loads a_0[t] .. a_{M-1}[t] (M arrays of 128 MiB,
//                DRAM, coalesced), stores their sum to out[t]; blocks of B threads (the same-run
//                reference, loopfree_probe.cu's lf_mM at B = 256)
//   tile_bB_mM   the same loads and store through a padded tile: each thread writes its sum to
//                tile[warp][lane], __syncthreads(), then stores tile[(warp + 1) % W][lane] (the
//                next warp's line, conflict-free) to out[t]: one barrier between every warp's
//                loads and its store, both global accesses one line per warp
//
// B = 256 at 8, 16, 32, 64 warps per SM (1, 2, 4, 8 resident blocks) and B = 1024 at 32 and 64
// (1, 2), set by dynamic shared memory the kernels do not use. 2^25 threads. Run under ncu by
// record_probe.sh tile (time, DRAM share of peak and bytes); table_probe.py tile adds the rows to
// gpa_lsp/data/coalescing.json ("tile"), read by gpa_lsp/analysis/coalescing.py.
//
// (lf2d and tile2d: below, at t2d.)
//
//   tile_probe           runs every configuration once (for ncu)
//   tile_probe --time    median of 5 timed runs of each configuration
//   tile_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

constexpr long N = 1L << 25;      // elements: 128 MiB per array
constexpr int MAXM = 2;

struct Arrays {
  const float* a[MAXM];
};

template <int M, int B>
__global__ void __launch_bounds__(B) lf(Arrays in, float* out) {
  const long t = long(blockIdx.x) * B + threadIdx.x;
  float s = 0.f;
#pragma unroll
  for (int m = 0; m < M; ++m) s += in.a[m][t];
  out[t] = s;
}

template <int M, int B>
__global__ void __launch_bounds__(B) tile(Arrays in, float* out) {
  constexpr int W = B / 32;
  __shared__ float buf[W][33];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long t = long(blockIdx.x) * B + threadIdx.x;
  float s = 0.f;
#pragma unroll
  for (int m = 0; m < M; ++m) s += in.a[m][t];
  buf[warp][lane] = s;
  __syncthreads();
  out[t] = buf[(warp + 1) % W][lane];
}

// The same two with the addresses of a 2D transpose in blocks of 32 x 32 threads (B = 1024 only):
// `in` a ROWS x COLS matrix, each warp one 128-byte row segment of the block's 32 x 32 tile, the
// block's tiles 32 rows of 128 B spread COLS floats apart (a tile's lines are not contiguous).
//   lf2d_b1024_m1    each warp writes its segment, untransposed, to the transposed tile's place in
//                    `out` (COLS x ROWS): both accesses one line per warp, no tile, no barrier
//   tile2d_b1024_m1  the transpose through a padded tile (the textbook coalesced transpose): the
//                    same lines read and written, a barrier between
constexpr int ROWS = 8192, COLS = 4096;   // ROWS x COLS = N

template <bool TILE>
__global__ void __launch_bounds__(1024) t2d(Arrays in, float* out) {
  __shared__ float buf[32][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int bx = blockIdx.x % (COLS / 32), by = blockIdx.x / (COLS / 32);
  const float v = in.a[0][long(by * 32 + ty) * COLS + bx * 32 + tx];
  if (TILE) {
    buf[ty][tx] = v;
    __syncthreads();
    out[long(bx * 32 + ty) * ROWS + by * 32 + tx] = buf[tx][ty];
  } else {
    out[long(bx * 32 + ty) * ROWS + by * 32 + tx] = v;
  }
}

using Kern = void (*)(Arrays, float*);
struct Mode {
  const char* name;
  int block;
  int m;
  Kern k;
};
static const Mode kModes[] = {
    {"lf", 256, 1, lf<1, 256>},       {"tile", 256, 1, tile<1, 256>},
    {"lf", 256, 2, lf<2, 256>},       {"tile", 256, 2, tile<2, 256>},
    {"lf", 1024, 1, lf<1, 1024>},     {"tile", 1024, 1, tile<1, 1024>},
    {"lf", 1024, 2, lf<2, 1024>},     {"tile", 1024, 2, tile<2, 1024>},
    {"lf2d", 1024, 1, t2d<false>},    {"tile2d", 1024, 1, t2d<true>},
};

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int smem_sm = 228 * 1024;
  Arrays in{};
  float* out = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    for (int m = 0; m < MAXM; ++m) {
      float* p = nullptr;
      CHECK(cudaMalloc(&p, N * sizeof(float)));
      CHECK(cudaMemset(p, 0, N * sizeof(float)));
      in.a[m] = p;
    }
    CHECK(cudaMalloc(&out, N * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  for (const Mode& md : kModes) {
    const int most = 2048 / md.block;   // blocks of B threads an SM holds at 64 warps
    for (int bps = 1; bps <= most; bps *= 2) {
      const int warps = bps * md.block / 32;
      if (list) {
        std::printf("%s_b%d_m%d warps_per_sm=%d\n", md.name, md.block, md.m, warps);
        continue;
      }
      // resident blocks per SM set by shared memory: bps blocks fit, bps + 1 do not
      const int smem = bps >= most ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      const long grid = N / md.block;
      auto go = [&] { md.k<<<unsigned(grid), md.block, smem>>>(in, out); };
      float median = 0.f;
      CHECK(run_or_time(go, timed, a, b, &median));
      if (timed) std::printf("%s_b%d_m%d warps_per_sm=%d median_ms=%.5f\n", md.name, md.block, md.m, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
