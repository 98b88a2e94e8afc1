// When batching the loads aliasing serializes pays: `const __restrict__` on a walk whose every load
// waits behind the previous step's store.
//
// In a loop `y[i] = f(x[i])` through plain pointers nvcc keeps each load below the previous store,
// which waits for the previous load: one round trip per step. With `__restrict__` it hoists the
// unrolled body's loads above its stores (one round trip per body). What that buys was seen to differ
// a lot: calibration index_select_rows 2.47x and zscore_features 4.82x, the restrict probe's
// hoist_low 2.77x, hoist (64 warps per SM, DRAM at its roof) 1.12x. This probe varies what may
// decide it, one thing at a time, each kernel plain and restrict (same body):
//
//   map_pP     a thread per row walks 256 floats of its row, y = x * a + b (every request on 32
//              lines: rows P floats apart); 2^17 rows, grid-stride over rows
//   soft_pP    the same rows, two passes: s = sum of the row (a read-only loop nvcc batches
//              already), then y = x * (1 / s) (the walk restrict batches): the re-read hits caches
//   col        a thread per column walking down 4096 rows of 2048 floats (coalesced, zscore-like)
//
// P = 1024 (rows 4 KiB apart: a power of two) and 1040 (4160 bytes), at 4, 8, 16, 32 and 64 warps per
// SM (blocks of 128 threads, grid = SMs x warps / 4: one wave, spread evenly).
//
//   batch_probe           runs every configuration once (for ncu)
//   batch_probe --time    median of 5 timed runs of each configuration
//   batch_probe --list    one line per configuration, in launch order
#include "../coalescing/probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

constexpr int C = 256;                 // floats walked per row
constexpr long ROWS = 1L << 17;        // rows of map/soft
constexpr int COL_ROWS = 4096, COL_COLS = 2048;

#define MAP(NAME, Q)                                                                           \
  __global__ void __launch_bounds__(128) NAME(float* Q y, const float* Q x, int pitch, float a, \
                                              float b) {                                        \
    for (long r = long(blockIdx.x) * blockDim.x + threadIdx.x; r < ROWS;                        \
         r += long(gridDim.x) * blockDim.x) {                                                   \
      const float* xr = x + r * pitch;                                                          \
      float* yr = y + r * pitch;                                                                \
      for (int i = 0; i < C; ++i) yr[i] = xr[i] * a + b;                                        \
    }                                                                                           \
  }

#define SOFT(NAME, Q)                                                                          \
  __global__ void __launch_bounds__(128) NAME(float* Q y, const float* Q x, int pitch, float a, \
                                              float b) {                                        \
    for (long r = long(blockIdx.x) * blockDim.x + threadIdx.x; r < ROWS;                        \
         r += long(gridDim.x) * blockDim.x) {                                                   \
      const float* xr = x + r * pitch;                                                          \
      float* yr = y + r * pitch;                                                                \
      float s = b;                                                                              \
      for (int i = 0; i < C; ++i) s += xr[i];                                                   \
      const float inv = a / s;                                                                  \
      for (int i = 0; i < C; ++i) yr[i] = xr[i] * inv;                                          \
    }                                                                                           \
  }

#define COL(NAME, Q)                                                                           \
  __global__ void __launch_bounds__(128) NAME(float* Q y, const float* Q x, int pitch, float a, \
                                              float b) {                                        \
    const int j = blockIdx.x * blockDim.x + threadIdx.x;                                        \
    for (int c = j; c < COL_COLS; c += gridDim.x * blockDim.x)                                  \
      for (int i = 0; i < COL_ROWS; ++i) y[long(i) * pitch + c] = x[long(i) * pitch + c] * a + b; \
  }

#define NOQ
MAP(map_plain, NOQ)
MAP(map_restrict, __restrict__)
SOFT(soft_plain, NOQ)
SOFT(soft_restrict, __restrict__)
COL(col_plain, NOQ)
COL(col_restrict, __restrict__)

using Kern = void (*)(float*, const float*, int, float, float);
struct Mode {
  const char* name;
  int pitch;
  Kern plain, restricted;
};
static const Mode kModes[] = {{"map_p1024", 1024, map_plain, map_restrict},
                              {"map_p1040", 1040, map_plain, map_restrict},
                              {"soft_p1024", 1024, soft_plain, soft_restrict},
                              {"soft_p1040", 1040, soft_plain, soft_restrict},
                              {"col", COL_COLS, col_plain, col_restrict}};
static const int kWarps[] = {4, 8, 16, 32, 64};

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132;
  float *x = nullptr, *y = nullptr;
  const size_t elems = size_t(ROWS) * 1040;      // the largest pitch; col needs 8 Mi floats
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMalloc(&x, elems * sizeof(float)));
    CHECK(cudaMalloc(&y, elems * sizeof(float)));
    CHECK(cudaMemset(x, 0, elems * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  for (const Mode& md : kModes) {
    for (int w : kWarps) {
      for (int q = 0; q < 2; ++q) {
        const char* which = q ? "restrict" : "plain";
        if (list) {
          std::printf("%s %s warps_per_sm=%d\n", md.name, which, w);
          continue;
        }
        Kern k = q ? md.restricted : md.plain;
        const unsigned grid = unsigned(sms * w / 4);
        auto go = [&] { k<<<grid, 128>>>(y, x, md.pitch, 1.5f, 1.0f); };
        float median = 0.f;
        CHECK(run_or_time(go, timed, a, b, &median));
        if (timed) std::printf("%s %s warps_per_sm=%d median_ms=%.5f\n", md.name, which, w, median);
      }
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
