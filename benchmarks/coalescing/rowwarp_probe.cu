// What a warp per row reaches: the rewrite Global Memory Coalescing proposes for a per-lane walk
// (a thread walks its own row) is a warp per row, its lanes striding over the row, a shuffle
// reduction at the end, one row per warp and 32x the threads. Its loads are coalesced, but each
// warp moves only its row (L elements) between its launch and its exit, and the time between
// (the loads' latency, the reduction, the store, the block's exit and the next block's launch) is
// the same whatever L is. With short rows a warp has little in flight over its life, so the
// memory unit that serves the row does not reach the share of its peak a stream reaches.
//
// Every configuration reads the same bytes and writes one float per row:
//   stream   the roof: a grid-stride float4 sum over the whole buffer (8 blocks of 256 per SM),
//            one float per thread written
//   wpr      one warp per row of L floats, one row per warp (rows/8 blocks of 256 threads): lanes
//            load floats l, l+32, ... (vec=1) or float4s (vec=4), shuffle sum, lane 0 stores
//   wprgs    the same rows walked by a persistent grid (8 blocks of 256 per SM), each warp
//            taking rows r, r + warps, ... (no block turnover)
// from a working set in DRAM (256 MiB, read once per launch) or in the L2 (24 MiB, relaunched:
// the L2 keeps it between launches, as the harness of a case relaunches its kernel).
//
// Times are per launch: events around a batch of 20 back-to-back launches, divided by 20, the
// median of 5 batches (an event pair around one launch adds 5-9 us on an H200, more than the L2
// configurations take). benchmarks/coalescing/table_rowwarp.py reads the --time output and writes
// the `rowwarp` rows of gpa_lsp/data/coalescing.json.
//
//   rowwarp_probe --time    one line per configuration: name, L, vec, where, ms per launch
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

constexpr long DRAM_FLOATS = 1L << 26;          // 256 MiB
constexpr long L2_FLOATS = 6L << 20;            // 24 MiB
constexpr int BLOCK = 256;
constexpr int BATCH = 20;

__device__ __forceinline__ float warp_sum(float s) {
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

__global__ void __launch_bounds__(BLOCK) stream(const float4* x, long n4, float* out) {
  float s = 0.f;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += long(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  out[long(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

template <int VEC>
__device__ __forceinline__ float row_sum(const float* x, long r, int L, int lane) {
  float s = 0.f;
  if (VEC == 1) {
    const float* row = x + r * L;
    for (int k = lane; k < L; k += 32) s += row[k];
  } else {
    const float4* row = reinterpret_cast<const float4*>(x + r * L);
    for (int k = lane; k < L / 4; k += 32) {
      const float4 v = row[k];
      s += (v.x + v.y) + (v.z + v.w);
    }
  }
  return warp_sum(s);
}

template <int VEC>
__global__ void __launch_bounds__(BLOCK) wpr(const float* x, long rows, int L, float* out) {
  const long r = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float s = row_sum<VEC>(x, r, L, lane);
  if (lane == 0) out[r] = s;
}

template <int VEC>
__global__ void __launch_bounds__(BLOCK) wprgs(const float* x, long rows, int L, float* out) {
  const int lane = threadIdx.x % 32;
  const long warps = long(gridDim.x) * (blockDim.x / 32);
  for (long r = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows; r += warps) {
    const float s = row_sum<VEC>(x, r, L, lane);
    if (lane == 0) out[r] = s;
  }
}

// ms per launch: events around BATCH back-to-back launches / BATCH, median of 5 batches
template <typename F>
cudaError_t per_launch_ms(F&& go, cudaEvent_t a, cudaEvent_t b, float* median) {
  for (int i = 0; i < 3; ++i) go();
  std::vector<float> ms;
  for (int r = 0; r < 5; ++r) {
    cudaError_t e = cudaEventRecord(a);
    for (int i = 0; i < BATCH && e == cudaSuccess; ++i) { go(); e = cudaGetLastError(); }
    if (e == cudaSuccess) e = cudaEventRecord(b);
    if (e == cudaSuccess) e = cudaEventSynchronize(b);
    float v = 0.f;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&v, a, b);
    if (e != cudaSuccess) return e;
    ms.push_back(v / BATCH);
  }
  std::sort(ms.begin(), ms.end());
  *median = ms[2];
  return cudaSuccess;
}

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--time")) {
    std::fprintf(stderr, "usage: rowwarp_probe --time\n");
    return 1;
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float *x = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&x, DRAM_FLOATS * sizeof(float)));
  CHECK(cudaMemset(x, 0, DRAM_FLOATS * sizeof(float)));
  CHECK(cudaMalloc(&out, DRAM_FLOATS / 32 * sizeof(float)));   // one per row at L = 32
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int persistent = sms * 8;
  const int lengths[] = {32, 64, 128, 256, 512, 1024, 2048, 4096};
  for (const char* where : {"dram", "l2"}) {
    const long n = std::strcmp(where, "dram") ? L2_FLOATS : DRAM_FLOATS;
    float ms = 0.f;
    CHECK(per_launch_ms([&] { stream<<<persistent, BLOCK>>>(reinterpret_cast<const float4*>(x), n / 4, out); },
                        a, b, &ms));
    std::printf("stream L=0 vec=4 where=%s bytes=%ld ms=%.6f\n", where, n * 4, ms);
    for (int L : lengths) {
      const long rows = n / L;
      const unsigned grid = unsigned((rows * 32 + BLOCK - 1) / BLOCK);
      for (int vec : {1, 4}) {
        if (vec == 4 && L < 128) continue;   // a float4 per lane needs rows of 128 floats or more
        auto one = vec == 1 ? wpr<1> : wpr<4>;
        auto gs = vec == 1 ? wprgs<1> : wprgs<4>;
        CHECK(per_launch_ms([&] { one<<<grid, BLOCK>>>(x, rows, L, out); }, a, b, &ms));
        std::printf("wpr L=%d vec=%d where=%s bytes=%ld ms=%.6f\n", L, vec, where, n * 4, ms);
        CHECK(per_launch_ms([&] { gs<<<persistent, BLOCK>>>(x, rows, L, out); }, a, b, &ms));
        std::printf("wprgs L=%d vec=%d where=%s bytes=%ld ms=%.6f\n", L, vec, where, n * 4, ms);
      }
    }
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
