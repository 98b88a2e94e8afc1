// What coalescing a per-lane sequential walk unloads on this GPU, unit by unit,
// and what the warp-per-row rewrite of it costs when rows are short.
//
// A CSR-like walk: rows of L elements (val: float, col: int), row r's bounds
// from row_ptr[r], row_ptr[r + 1]; every element is used once. Three ways to
// walk the same 2^25 elements:
//
//   scalar  one thread per row, each lane walks its own row: at step k the 32
//           lanes of a warp read 32 places a row apart (the uncoalesced walk;
//           lane l's sector is used again by its next 7 steps if its line
//           survives in L1 until then)
//   ell     one thread per row, the same rows stored column-major (element k of
//           row r at k * rows + r): the same threads, the same steps, every
//           request coalesced -- coalescing and nothing else
//   vector  one warp per row (CSR vector): lanes read consecutive elements of
//           the row, 32 at a time, then a shuffle reduction; 32x the warps,
//           ceil(L / 32) steps each
//
// gather=1 adds x[col[j]] (x: 4 MiB, col within +-2048 of the row's place in
// x), as in a sparse matrix-vector product; gather=0 uses col[j] as a value.
// Warps per SM: grid = SMs x blocks per SM (1, 2, 4, 8 blocks of 256 threads:
// 8, 16, 32, 64 warps), every kernel a grid-stride loop over its rows, so the
// L1 footprint of the scalar walk (warps x 32 lanes x a line per array) grows
// with the warps while the work stays the same.
//
// Run under ncu by record_probe.sh lanewalk (time, L1 hit rate, L2 sectors from L1,
// DRAM bytes, L1/L2/DRAM share of peak); table_lanewalk.py adds the rows to
// gpa_lsp/data/coalescing.json ("lanewalk").
//
//   lanewalk_probe           runs every configuration once (for ncu)
//   lanewalk_probe --time    median of 5 timed runs of each configuration
//   lanewalk_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>


constexpr long NNZ = 1L << 25;    // elements walked in every configuration
constexpr int NX = 1 << 20;       // x: 4 MiB
constexpr int BAND = 2048;

__device__ __forceinline__ unsigned mix(unsigned v) {
  v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15; v *= 0x846ca68bu; v ^= v >> 16;
  return v;
}

// row r of L elements: CSR (r * L + k) and ELL (k * rows + r) hold the same values
__global__ void fill(int rows, int L, int* row_ptr, int* col, float* val, int* col_t, float* val_t) {
  const long n = long(rows) * L;
  for (long j = long(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += long(gridDim.x) * blockDim.x) {
    const int r = int(j / L), k = int(j % L);
    const int centre = int(long(r) * NX / rows);
    const int c = (centre + int(mix(unsigned(j)) % (2 * BAND + 1)) - BAND + NX) % NX;
    const float v = float(mix(unsigned(j) ^ 0x9e3779b9u) & 0xffff) / 65536.f - 0.5f;
    col[j] = c;
    val[j] = v;
    col_t[long(k) * rows + r] = c;
    val_t[long(k) * rows + r] = v;
    if (k == 0) row_ptr[r] = int(j);
    if (j == n - 1) row_ptr[rows] = int(n);
  }
}

template <bool GATHER>
__device__ __forceinline__ float term(const float* val, const int* col, const float* x, long j) {
  return GATHER ? val[j] * x[col[j]] : val[j] + float(col[j]);
}

template <bool GATHER>
__global__ void __launch_bounds__(256) scalar(int rows, const int* row_ptr, const int* col, const float* val,
                                              const float* x, float* y) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
    float sum = 0.f;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) sum += term<GATHER>(val, col, x, j);
    y[r] = sum;
  }
}

template <bool GATHER>
__global__ void __launch_bounds__(256) ell(int rows, const int* row_ptr, const int* col, const float* val,
                                           const float* x, float* y) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
    float sum = 0.f;
    const int n = row_ptr[r + 1] - row_ptr[r];
    for (int k = 0; k < n; ++k) sum += term<GATHER>(val, col, x, long(k) * rows + r);
    y[r] = sum;
  }
}

template <bool GATHER>
__global__ void __launch_bounds__(256) vector(int rows, const int* row_ptr, const int* col, const float* val,
                                              const float* x, float* y) {
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * (blockDim.x >> 5);
  for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
    float sum = 0.f;
    for (int j = row_ptr[r] + lane; j < row_ptr[r + 1]; j += 32) sum += term<GATHER>(val, col, x, j);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if (lane == 0) y[r] = sum;
  }
}

using Kern = void (*)(int, const int*, const int*, const float*, const float*, float*);
struct Mode {
  const char* name;
  Kern k[2];   // gather 0, 1
};
static const Mode kModes[] = {
    {"scalar", {scalar<false>, scalar<true>}},
    {"ell", {ell<false>, ell<true>}},
    {"vector", {vector<false>, vector<true>}},
};
static const int kLengths[] = {4, 16, 32, 128};
static const int kBlocksPerSm[] = {1, 2, 4, 8};   // x 8 warps: 8, 16, 32, 64 warps per SM

#ifndef LANEWALK_NO_MAIN
int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132;
  int *row_ptr = nullptr, *col = nullptr, *col_t = nullptr;
  float *val = nullptr, *val_t = nullptr, *x = nullptr, *y = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long max_rows = NNZ / kLengths[0];
    CHECK(cudaMalloc(&row_ptr, (max_rows + 1) * sizeof(int)));
    CHECK(cudaMalloc(&col, NNZ * sizeof(int)));
    CHECK(cudaMalloc(&val, NNZ * sizeof(float)));
    CHECK(cudaMalloc(&col_t, NNZ * sizeof(int)));
    CHECK(cudaMalloc(&val_t, NNZ * sizeof(float)));
    CHECK(cudaMalloc(&x, NX * sizeof(float)));
    CHECK(cudaMalloc(&y, max_rows * sizeof(float)));
    CHECK(cudaMemset(x, 0, NX * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const int block = 256;
  for (int L : kLengths) {
    const int rows = int(NNZ / L);
    if (!list) {
      fill<<<sms * 8, 256>>>(rows, L, row_ptr, col, val, col_t, val_t);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    for (int gather = 0; gather < 2; ++gather) {
      for (const Mode& m : kModes) {
        for (int bps : kBlocksPerSm) {
          const int grid = sms * bps, warps = bps * block / 32;
          if (list) {
            std::printf("%s L=%d gather=%d warps_per_sm=%d\n", m.name, L, gather, warps);
            continue;
          }
          const bool t = !std::strcmp(m.name, "ell");
          auto go = [&] { m.k[gather]<<<grid, block>>>(rows, row_ptr, t ? col_t : col, t ? val_t : val, x, y); };
          if (!timed) {
            go();
            CHECK(cudaGetLastError());
            continue;
          }
          float median = 0.f;
          CHECK(median_ms(go, a, b, &median));
          std::printf("%s L=%d gather=%d warps_per_sm=%d median_ms=%.5f\n", m.name, L, gather, warps, median);
        }
      }
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
#endif  // LANEWALK_NO_MAIN
