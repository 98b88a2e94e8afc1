// What the extra sector of a misaligned contiguous access costs, and what staging it through shared
// memory gains.
//
// A warp whose 32 lanes read 32 consecutive floats starting one element off a 128-byte line touches
// 5 sectors instead of 4 (Nsight Compute: sectors 1.25x the ideal). Stencils do this on every
// neighbour tap (`in[i - 1]`, `in[i + 1]`), and Global Memory Coalescing reads it as excess. No
// mapping of threads removes it (consecutive threads already touch consecutive addresses); the
// change that does is a shared-memory tile loaded aligned, as the advice's "or stage through shared
// memory" says. Is the extra sector a cost at all? The neighbouring warp fetches the same line, so
// DRAM moves the same bytes; what grows is L1/L2 work (two lines per request) and the requests'
// latency.
//
//   copy_a0     out[i] = in[i]                       (aligned: the reference)
//   copy_a1     out[i] = in[i + 1]                   (the load misaligned)
//   copy_s1     out[i + 1] = in[i]                   (the store misaligned)
//   s3          out[i] = in[i - 1] + in[i] + in[i + 1]          (two misaligned loads)
//   s3_tile     the same through a shared tile of the block's 256 + 2 floats (aligned loads)
//   t9          out[i] = sum of in[i - 4 .. i + 4]   (eight misaligned loads, all but one L1 hits)
//   t9_tile     the same through a shared tile of 256 + 8 floats
//   h5          2D 5-point stencil on 8192 x 8192 floats in 32 x 8 blocks (heat equation form:
//               two misaligned loads, two aligned rows above and below)
//   h5_tile     the same through a (8 + 2) x (32 + 2) shared tile with a one-point halo
//
// Every kernel is loop-free, one output per thread, 2^26 floats in and out (256 MiB each, far over
// the L2), in blocks of 256 threads at 16, 32 and 64 warps per SM (resident blocks set by dynamic
// shared memory the kernel does not use). Run under ncu by record_probe.sh misalign (time, units'
// shares of peak, sectors, L1 wavefronts, DRAM bytes); table_probe.py misalign adds the rows to
// gpa_lsp/data/coalescing.json ("misalign").
//
//   misalign_probe           runs every configuration once (for ncu)
//   misalign_probe --time    median of 5 timed runs of each configuration
//   misalign_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

constexpr long N = 1L << 26;
constexpr int NX = 8192;          // h5: NX x NX = N
constexpr int PAD = 64;           // floats kept before and after `in` so that every tap is in bounds

__global__ void __launch_bounds__(256) copy_a0(const float* in, float* out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

__global__ void __launch_bounds__(256) copy_a1(const float* in, float* out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = in[i + 1];
}

__global__ void __launch_bounds__(256) copy_s1(const float* in, float* out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i + 1] = in[i];
}

__global__ void __launch_bounds__(256) s3(const float* in, float* out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = in[i - 1] + in[i] + in[i + 1];
}

__global__ void __launch_bounds__(256) s3_tile(const float* in, float* out) {
  __shared__ float t[256 + 2];
  const long b0 = long(blockIdx.x) * blockDim.x;
  const int x = threadIdx.x;
  t[x + 1] = in[b0 + x];
  if (x == 0) t[0] = in[b0 - 1];
  if (x == 255) t[257] = in[b0 + 256];
  __syncthreads();
  out[b0 + x] = t[x] + t[x + 1] + t[x + 2];
}

__global__ void __launch_bounds__(256) t9(const float* in, float* out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  float s = 0.f;
#pragma unroll
  for (int k = -4; k <= 4; ++k) s += in[i + k];
  out[i] = s;
}

__global__ void __launch_bounds__(256) t9_tile(const float* in, float* out) {
  __shared__ float t[256 + 8];
  const long b0 = long(blockIdx.x) * blockDim.x;
  const int x = threadIdx.x;
  t[x + 4] = in[b0 + x];
  if (x < 4) t[x] = in[b0 - 4 + x];
  if (x >= 252) t[x + 8] = in[b0 + x + 4];
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int k = 0; k <= 8; ++k) s += t[x + k];
  out[b0 + x] = s;
}

// 2D: x = blockIdx.x * 32 + threadIdx.x % 32, y = blockIdx.y * 8 + threadIdx.x / 32; rows 0 and
// NX - 1 read the padding's row above and below (in holds NX floats of padding on each side).
__global__ void __launch_bounds__(256) h5(const float* in, float* out) {
  const int x = blockIdx.x * 32 + threadIdx.x % 32, y = blockIdx.y * 8 + threadIdx.x / 32;
  const long i = long(y) * NX + x;
  const float u = in[i];
  const float lap = in[i - NX] + in[i + NX] + in[i - 1] + in[i + 1] - 4.f * u;
  out[i] = u + 0.25f * lap;
}

__global__ void __launch_bounds__(256) h5_tile(const float* in, float* out) {
  __shared__ float t[8 + 2][32 + 2];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int x = blockIdx.x * 32 + tx, y = blockIdx.y * 8 + ty;
  const long i = long(y) * NX + x;
  t[ty + 1][tx + 1] = in[i];
  if (ty == 0) t[0][tx + 1] = in[i - NX];
  if (ty == 7) t[9][tx + 1] = in[i + NX];
  if (tx == 0) t[ty + 1][0] = in[i - 1];
  if (tx == 31) t[ty + 1][33] = in[i + 1];
  __syncthreads();
  const float u = t[ty + 1][tx + 1];
  const float lap = t[ty][tx + 1] + t[ty + 2][tx + 1] + t[ty + 1][tx] + t[ty + 1][tx + 2] - 4.f * u;
  out[i] = u + 0.25f * lap;
}

using Kern = void (*)(const float*, float*);
struct Mode {
  const char* name;
  Kern k;
  bool two_d;
};
static const Mode kModes[] = {{"copy_a0", copy_a0, false}, {"copy_a1", copy_a1, false},
                              {"copy_s1", copy_s1, false}, {"s3", s3, false},
                              {"s3_tile", s3_tile, false}, {"t9", t9, false},
                              {"t9_tile", t9_tile, false}, {"h5", h5, true},
                              {"h5_tile", h5_tile, true}};
static const int kBlocksPerSm[] = {2, 4, 8};   // x 8 warps: 16, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int smem_sm = 228 * 1024;
  float *buf = nullptr, *obuf = nullptr;
  const long padded = N + 2L * NX;   // NX >= PAD floats before and after, for both 1D and 2D taps
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CHECK(cudaMalloc(&buf, padded * sizeof(float)));
    CHECK(cudaMemset(buf, 0, padded * sizeof(float)));
    CHECK(cudaMalloc(&obuf, (N + PAD) * sizeof(float)));
  }
  const float* in = buf + NX;        // 128-byte aligned: NX floats = 32 KiB
  float* out = obuf;
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  for (const Mode& md : kModes) {
    const dim3 grid = md.two_d ? dim3(NX / 32, NX / 8) : dim3(unsigned(N / 256));
    for (int bps : kBlocksPerSm) {
      const int warps = bps * 8;
      if (list) {
        std::printf("%s warps_per_sm=%d\n", md.name, warps);
        continue;
      }
      const int smem = bps >= 8 ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto go = [&] { md.k<<<grid, 256, smem>>>(in, out); };
      float median = 0.f;
      CHECK(run_or_time(go, timed, a, b, &median));
      if (timed) std::printf("%s warps_per_sm=%d median_ms=%.5f\n", md.name, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
