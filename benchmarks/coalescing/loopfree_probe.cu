// How much DRAM bandwidth a loop-free kernel pulls with the loads it has in flight, against a
// streaming loop with the same bytes in flight (scripts/gpu/mlp_probe.cu's curve).
//
// A coalesced loop-free kernel (one element per thread: a stencil point, a pixel, a complex
// magnitude) is what Global Memory Coalescing leaves when it remaps the index of a loop-free
// kernel: the same threads, each with the same loads, now one line per warp load. Each warp has
// its loads in flight once, then computes, stores and exits, and a new block takes its place: is
// the DRAM share it reaches the loop's at the same bytes in flight per SM (warps x DRAM bytes
// per warp), or less?
//
//   lf_mM      loop-free: thread t loads a_0[t] .. a_{M-1}[t] (M arrays of 128 MiB, from DRAM),
//              stores their sum to out[t]; 2^25 threads, blocks of 256
//   lfhit_mM   the same with 4 more loads per thread from a 4 KiB table (L1 hits): loads in flight
//              that DRAM does not serve
//   loop_mM    the same M loads and store per element in a grid-stride loop, grid = SMs x blocks
//              per SM (mlp_probe's copy)
//   lfalu_pP_qQ_m1  lf_m1 with P FFMAs before the load (its index depends on them) and Q after it
//              on the loaded value: issue work in each warp's life beside its DRAM line
//
// Warps per SM: 8, 16, 32, 64 (1, 2, 4, 8 resident blocks of 256 threads, set by dynamic shared
// memory the kernels do not use). Run under ncu by record_probe.sh loopfree (time, DRAM share of
// peak and bytes); table_loopfree.py adds the rows to gpa_lsp/data/coalescing.json ("loopfree").
//
//   loopfree_probe           runs every configuration once (for ncu)
//   loopfree_probe --time    median of 5 timed runs of each configuration
//   loopfree_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>


constexpr long N = 1L << 25;      // elements: 128 MiB per array
constexpr int MAXM = 4;
constexpr int TABLE = 1024;       // floats: 4 KiB

struct Arrays {
  const float* a[MAXM];
  int zero;   // 0 at run time, unknown to the compiler
};

template <int M, bool HIT>
__global__ void __launch_bounds__(256) lf(Arrays in, const float* tbl, float* out) {
  const long t = long(blockIdx.x) * blockDim.x + threadIdx.x;
  float s = 0.f;
#pragma unroll
  for (int m = 0; m < M; ++m) s += in.a[m][t];
  if (HIT) {
#pragma unroll
    for (int k = 0; k < 4; ++k) s += tbl[(int(t) + 32 * k) & (TABLE - 1)];
  }
  out[t] = s;
}

// lf_m1 with issue work around its load: PRE FFMAs (4 chains) that its index depends on, POST FFMAs
// on the loaded value before the store (a stencil's address arithmetic and arithmetic)
template <int PRE, int POST>
__global__ void __launch_bounds__(256) lfalu(Arrays in, const float* tbl, float* out) {
  const long t = long(blockIdx.x) * blockDim.x + threadIdx.x;
  float x0 = float(t & 255), x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f;
#pragma unroll
  for (int k = 0; k < PRE / 4; ++k) {
    x0 = fmaf(x0, 0.999f, 0.5f); x1 = fmaf(x1, 0.999f, 0.25f);
    x2 = fmaf(x2, 0.999f, 0.125f); x3 = fmaf(x3, 0.999f, 0.0625f);
  }
  const long i = t + (int(x0 + x1 + x2 + x3) & in.zero);
  float s0 = in.a[0][i], s1 = s0 + 1.f, s2 = s0 + 2.f, s3 = s0 + 3.f;
#pragma unroll
  for (int k = 0; k < POST / 4; ++k) {
    s0 = fmaf(s0, 0.999f, 0.5f); s1 = fmaf(s1, 0.999f, 0.25f);
    s2 = fmaf(s2, 0.999f, 0.125f); s3 = fmaf(s3, 0.999f, 0.0625f);
  }
  out[t] = s0 + s1 + s2 + s3;
}

template <int M>
__global__ void __launch_bounds__(256) loop(Arrays in, const float* tbl, float* out) {
  for (long t = long(blockIdx.x) * blockDim.x + threadIdx.x; t < N; t += long(gridDim.x) * blockDim.x) {
    float s = 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m) s += in.a[m][t];
    out[t] = s;
  }
}

using Kern = void (*)(Arrays, const float*, float*);
struct Mode {
  const char* name;
  int m;
  bool grid_stride;
  Kern k;
};
static const Mode kModes[] = {
    {"lf", 1, false, lf<1, false>},     {"lf", 2, false, lf<2, false>},     {"lf", 4, false, lf<4, false>},
    {"lfhit", 1, false, lf<1, true>},   {"lfhit", 2, false, lf<2, true>},
    {"loop", 1, true, loop<1>},         {"loop", 2, true, loop<2>},         {"loop", 4, true, loop<4>},
    {"lfalu_p16_q16", 1, false, lfalu<16, 16>}, {"lfalu_p32_q32", 1, false, lfalu<32, 32>},
    {"lfalu_p64_q64", 1, false, lfalu<64, 64>}, {"lfalu_p0_q64", 1, false, lfalu<0, 64>},
    {"lfalu_p64_q0", 1, false, lfalu<64, 0>},  {"lfalu_p128_q128", 1, false, lfalu<128, 128>},
};
static const int kBlocksPerSm[] = {1, 2, 4, 8};   // x 8 warps: 8, 16, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int sms = 132, smem_sm = 228 * 1024;
  Arrays in{};
  in.zero = argc > 2 ? std::atoi(argv[2]) : 0;
  float *tbl = nullptr, *out = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    for (int m = 0; m < MAXM; ++m) {
      float* p = nullptr;
      CHECK(cudaMalloc(&p, N * sizeof(float)));
      CHECK(cudaMemset(p, 0, N * sizeof(float)));
      in.a[m] = p;
    }
    CHECK(cudaMalloc(&tbl, TABLE * sizeof(float)));
    CHECK(cudaMemset(tbl, 0, TABLE * sizeof(float)));
    CHECK(cudaMalloc(&out, N * sizeof(float)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const int block = 256;
  for (const Mode& md : kModes) {
    for (int bps : kBlocksPerSm) {
      const int warps = bps * block / 32;
      if (list) {
        std::printf("%s_m%d warps_per_sm=%d\n", md.name, md.m, warps);
        continue;
      }
      // resident blocks per SM set by shared memory: bps blocks fit, bps + 1 do not
      const int smem = bps >= 8 ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      const long grid = md.grid_stride ? long(sms) * bps : N / block;
      auto go = [&] { md.k<<<unsigned(grid), block, smem>>>(in, tbl, out); };
      if (!timed) {
        go();
        CHECK(cudaGetLastError());
        continue;
      }
      float median = 0.f;
      CHECK(median_ms(go, a, b, &median));
      std::printf("%s_m%d warps_per_sm=%d median_ms=%.5f\n", md.name, md.m, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
