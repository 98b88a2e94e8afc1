// What one step of a latency-bound copy walk costs as its requests touch more lines.
//
// A copy walk (`for d: dst[d] = src[d]` through pointers that may alias: each load waits behind the
// previous store, so a thread's steps are a serial chain of round trips) is latency-bound when no
// unit is busy; coalescing it (a warp per row) shortens every thread's chain and makes each request
// touch fewer lines. The calibration case kernels/index_select_rows measured 12.3x for that change;
// the divergence probe's latency growth (a request of 32 sectors about 2x one of 4, at 8 warps per
// SM) explains little of it. This probe measures the step directly:
//
//   walk_gG    out[r * 64 + k] = table[idx[r] * 64 + k] for 2^19 rows picked at random from a
//              256 MiB table (idx read once per thread), G consecutive lanes share a row and stride
//              over it (G = 1: a thread per row, every request on 32 lines; G = 32: a warp per row,
//              one line), so each thread walks 64 / G steps and the grid has 2^19 * G threads;
//              plain pointers: one LDG then one STG per step, in order.
//   walkv4_g1  the thread-per-row walk moving float4s: 16 steps of a 16-byte load and store (what
//              Memory Transaction Reduction's "fewer, wider accesses" makes of it).
//   walkh_g1   the thread-per-row walk moving 2-byte elements (halves): 128 steps per 256-byte row,
//              whose 16-byte form is walkv4_g1 (the same bytes in 16 steps: 8x fewer round trips).
//
// G = 1, 2, 4, 8, 16, 32 (and walkv4_g1, walkh_g1) at 8, 16, 32 and 64 warps per SM (blocks of 256, resident blocks set by
// dynamic shared memory the kernel does not use). Run under ncu by record_probe.sh copywalk (time,
// units' shares of peak, requests and sectors, DRAM bytes); not yet read by any model
// (benchmarks/coalescing/README.md).
//
//   copywalk_probe           runs every configuration once (for ncu)
//   copywalk_probe --time    median of 5 timed runs of each configuration
//   copywalk_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

constexpr int D = 64;                       // floats per row
constexpr long TABLE_ROWS = 1L << 20;       // 256 MiB
constexpr long ROWS = 1L << 19;             // rows copied per launch (128 MiB)

template <int G>
__global__ void __launch_bounds__(256) walk(float* out, const float* table, const int* idx) {
  const long t = long(blockIdx.x) * blockDim.x + threadIdx.x;
  const long r = t / G;
  const int lane = int(t % G);
  if (r >= ROWS) return;
  const float* src = table + long(idx[r]) * D;
  float* dst = out + r * D;
  for (int k = lane; k < D; k += G) dst[k] = src[k];
}

__global__ void __launch_bounds__(256) walkv4(float* out, const float* table, const int* idx) {
  const long r = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= ROWS) return;
  const float4* src = reinterpret_cast<const float4*>(table + long(idx[r]) * D);
  float4* dst = reinterpret_cast<float4*>(out + r * D);
  for (int k = 0; k < D / 4; ++k) dst[k] = src[k];
}

__global__ void __launch_bounds__(256) walkh(float* out, const float* table, const int* idx) {
  const long r = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= ROWS) return;
  const unsigned short* src = reinterpret_cast<const unsigned short*>(table + long(idx[r]) * D);
  unsigned short* dst = reinterpret_cast<unsigned short*>(out + r * D);
  for (int k = 0; k < 2 * D; ++k) dst[k] = src[k];
}

using Kern = void (*)(float*, const float*, const int*);
struct Mode {
  const char* name;
  int g;      // lanes per row (threads per row)
  Kern k;
};
static const Mode kModes[] = {{"walk_g1", 1, walk<1>},   {"walk_g2", 2, walk<2>},   {"walk_g4", 4, walk<4>},
                              {"walk_g8", 8, walk<8>},   {"walk_g16", 16, walk<16>}, {"walk_g32", 32, walk<32>},
                              {"walkv4_g1", 1, walkv4}, {"walkh_g1", 1, walkh}};
static const int kBlocksPerSm[] = {1, 2, 4, 8};   // x 8 warps: 8, 16, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int smem_sm = 228 * 1024;
  float *table = nullptr, *out = nullptr;
  int* idx = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CHECK(cudaMalloc(&table, TABLE_ROWS * D * sizeof(float)));
    CHECK(cudaMemset(table, 0, TABLE_ROWS * D * sizeof(float)));
    CHECK(cudaMalloc(&out, ROWS * D * sizeof(float)));
    CHECK(cudaMalloc(&idx, ROWS * sizeof(int)));
    std::vector<int> h(ROWS);
    uint64_t s = 12345u;
    for (auto& v : h) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = int((s >> 33) % uint64_t(TABLE_ROWS)); }
    CHECK(cudaMemcpy(idx, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  for (const Mode& md : kModes) {
    const unsigned grid = unsigned((ROWS * md.g + 255) / 256);
    for (int bps : kBlocksPerSm) {
      const int warps = bps * 8;
      if (list) {
        std::printf("%s warps_per_sm=%d\n", md.name, warps);
        continue;
      }
      const int smem = bps >= 8 ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto go = [&] { md.k<<<grid, 256, smem>>>(out, table, idx); };
      float median = 0.f;
      CHECK(run_or_time(go, timed, a, b, &median));
      if (timed) std::printf("%s warps_per_sm=%d median_ms=%.5f\n", md.name, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
