// The harness: row sums of a matrix a few times on the GPU, checked on the CPU; exits 0 when right.
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include "rowsum.h"

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); return 2; } } while (0)

int main() {
  const int rows = 1 << 16, cols = 256, iterations = 20;
  std::vector<float> host((size_t)rows * cols);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 7) - 3.0f;
  float *matrix, *sums;
  CHECK(cudaMalloc(&matrix, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&sums, rows * sizeof(float)));
  CHECK(cudaMemcpy(matrix, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; ++it) row_sums(matrix, sums, rows, cols);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> out(rows);
  CHECK(cudaMemcpy(out.data(), sums, rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r : {0, 1, 2, 1000, rows / 2, rows - 1}) {
    double want = 0;
    for (int c = 0; c < cols; ++c) want += host[(size_t)r * cols + c];
    want *= 0.5;
    if (std::fabs(out[r] - want) > 1e-3 * (1.0 + std::fabs(want))) {
      std::fprintf(stderr, "wrong sum of row %d: %f, expected %f\n", r, out[r], want);
      return 1;
    }
  }
  std::printf("rowsum: %d x %d x %d launches, result ok\n", rows, cols, iterations);
  CHECK(cudaFree(matrix));
  CHECK(cudaFree(sums));
  return 0;
}
