// Strips: the calibration case's work loop (kernels/zscore_features: clipped z-scores of a rows x 2048
// float matrix, one thread per feature) cut into S strips over blockIdx.y, timed at S = 1 .. 2 waves
// and at three matrix heights, so that Block Increase's split estimate (full-wave model, DRAM ceiling
// STRIPS_DRAM_PCT) can be read against time and DRAM share as the grid grows and as strips lengthen.
//   strips ROWS S [S ...]          -> one JSON line per S: {"rows", "strips", "blocks", "median_ms", "gbps"}
//   strips --once ROWS S [S ...]   -> two launches per S, untimed (for ncu's DRAM share)
// 64-thread blocks: 32 resident per SM, a full wave is 132 x 32 = 4224 blocks = 132 strips.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__global__ void standardize(float* out, const float* x, const float* mean, const float* inv_sd, int n, int f) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= f) return;
  const float m = mean[j], s = inv_sd[j];
  const int rows = (n + gridDim.y - 1) / gridDim.y;
  const int i0 = blockIdx.y * rows, i1 = min(i0 + rows, n);
  for (int i = i0; i < i1; ++i) {
    const float z = (x[size_t(i) * f + j] - m) * s;
    out[size_t(i) * f + j] = fminf(fmaxf(z, -3.f), 3.f);
  }
}

int main(int argc, char** argv) {
  const bool once = argc > 1 && std::string(argv[1]) == "--once";
  const int first = once ? 2 : 1;
  if (argc < first + 2) { std::fprintf(stderr, "usage: strips [--once] ROWS S [S ...]\n"); return 2; }
  const int n = std::atoi(argv[first]), f = 2048, block = 64;
  const size_t cells = size_t(n) * f;
  float *x, *out, *mean, *inv;
  cudaMalloc(&x, cells * 4); cudaMalloc(&out, cells * 4); cudaMalloc(&mean, f * 4); cudaMalloc(&inv, f * 4);
  cudaMemset(x, 0x3f, cells * 4); cudaMemset(mean, 0, f * 4); cudaMemset(inv, 0x3f, f * 4);  // 0.75f
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  for (int k = first + 1; k < argc; ++k) {
    const int s = std::atoi(argv[k]);
    const dim3 grid(f / block, s);
    if (once) {
      for (int w = 0; w < 2; ++w) standardize<<<grid, block>>>(out, x, mean, inv, n, f);
      cudaDeviceSynchronize();
      continue;
    }
    for (int w = 0; w < 3; ++w) standardize<<<grid, block>>>(out, x, mean, inv, n, f);
    std::vector<float> ms(20);
    for (auto& t : ms) {
      cudaEventRecord(a);
      standardize<<<grid, block>>>(out, x, mean, inv, n, f);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      cudaEventElapsedTime(&t, a, b);
    }
    std::sort(ms.begin(), ms.end());
    const double med = 0.5 * (ms[9] + ms[10]);
    std::printf("{\"rows\": %d, \"strips\": %d, \"blocks\": %d, \"median_ms\": %.6f, \"gbps\": %.1f}\n", n, s,
                int(grid.x * grid.y), med, 2.0 * cells * 4 / (med * 1e6));
  }
  if (cudaGetLastError() != cudaSuccess) { std::fprintf(stderr, "CUDA error\n"); return 1; }
  return 0;
}
