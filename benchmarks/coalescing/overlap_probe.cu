// How the L1's work and the issue slots' work overlap when neither unit is saturated: the state a
// kernel is left in when coalescing unloads the L1 that held it.
//
// Every warp iterates: LOADS loads from an L1-resident 16 KiB tile, each touching LINES lines
// (lane l reads line l % LINES; LINES = 1 is coalesced), each feeding an FFMA into one
// accumulator (a dependent chain, as a distance or a dot product), and ALU more FFMAs in 4
// independent chains (resident blocks per SM set by unused dynamic shared memory). Varying ALU against the loads' L1 lines moves the kernel from L1-bound to
// issue-bound through the states where both are busy. Under ncu each configuration gives its
// time and both units' shares of peak (l1tex__throughput, smsp__issue_active: the model's units,
// gpa_lsp/profile/throughput.py), so the combining law can be read off: is the time the larger
// unit's busy time (perfect overlap), their sum, or between?
//
//   mix_lL_aA   LINES = L (0: no loads), ALU = A, LOADS = 8; 16 and 64 warps per SM
//
// Run under ncu by record_probe.sh overlap; table_overlap.py adds the rows to
// gpa_lsp/data/coalescing.json ("overlap").
//
//   overlap_probe           runs every configuration once (for ncu)
//   overlap_probe --time    median of 5 timed runs of each configuration
//   overlap_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>


constexpr int TILE = 4096;   // floats: 16 KiB
constexpr int LOADS = 8;
constexpr int ITERS = 256;

template <int LINES, int ALU>
__global__ void __launch_bounds__(256) mix(const float* tile, float* out, float c) {
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int spread = LINES > 0 ? LINES : 1;
  const int lane_off = (lane % spread) * 32 + lane / spread;
  float s = 0.f, x0 = c, x1 = c + 1.f, x2 = c + 2.f, x3 = c + 3.f;
  for (int it = 0; it < ITERS; ++it) {
    if (LINES > 0) {
#pragma unroll
      for (int k = 0; k < LOADS; ++k) {
        const float v = tile[(lane_off + (k + it * LOADS + warp) * 32 * spread) & (TILE - 1)];
        s = fmaf(v, v, s);
      }
    }
#pragma unroll
    for (int a = 0; a < ALU / 4; ++a) {
      x0 = fmaf(x0, c, 0.5f);
      x1 = fmaf(x1, c, 0.25f);
      x2 = fmaf(x2, c, 0.125f);
      x3 = fmaf(x3, c, 0.0625f);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + x0 + x1 + x2 + x3;
}

using Kern = void (*)(const float*, float*, float);
struct Mode {
  int lines, alu;
  Kern k;
};
static const Mode kModes[] = {
    {1, 0, mix<1, 0>},   {1, 16, mix<1, 16>},   {1, 32, mix<1, 32>},   {1, 64, mix<1, 64>},
    {1, 128, mix<1, 128>},
    {8, 0, mix<8, 0>},   {8, 16, mix<8, 16>},   {8, 32, mix<8, 32>},   {8, 64, mix<8, 64>},
    {8, 128, mix<8, 128>}, {8, 256, mix<8, 256>},
    {0, 32, mix<0, 32>}, {0, 128, mix<0, 128>},
};
static const int kBlocksPerSm[] = {2, 8};   // x 8 warps: 16, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132, smem_sm = 228 * 1024;
  float *tile = nullptr, *out = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CHECK(cudaMalloc(&tile, TILE * sizeof(float)));
    CHECK(cudaMemset(tile, 0, TILE * sizeof(float)));
    CHECK(cudaMalloc(&out, long(sms) * 8 * 256 * 4 * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const int block = 256;
  for (const Mode& md : kModes) {
    for (int bps : kBlocksPerSm) {
      const int warps = bps * block / 32;
      if (list) {
        std::printf("mix_l%d_a%d warps_per_sm=%d\n", md.lines, md.alu, warps);
        continue;
      }
      // 4 waves of resident blocks, so every SM keeps bps blocks for most of the launch
      const int grid = sms * bps * 4;
      // resident blocks per SM set by shared memory the kernel does not use: bps fit, bps + 1 do not
      const int smem = bps >= 8 ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto go = [&] { md.k<<<grid, block, smem>>>(tile, out, 0.999f); };
      if (!timed) {
        go();
        CHECK(cudaGetLastError());
        continue;
      }
      float median = 0.f;
      CHECK(median_ms(go, a, b, &median));
      std::printf("mix_l%d_a%d warps_per_sm=%d median_ms=%.5f\n", md.lines, md.alu, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
