// The harness: smooths a ramp a few times on the GPU, checks the result, exits 0 when it is right.
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include "smooth.h"

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); return 2; } } while (0)

int main() {
  const int n = 1 << 24, iterations = 50;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 1000);
  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; ++it) smooth(x, y, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i : {0, 1, 500, 999, 1000, n / 2, n - 1}) {
    float l = host[i > 0 ? i - 1 : 0], r = host[i < n - 1 ? i + 1 : n - 1];
    float want = (l + host[i] + r) / 3.0f;
    if (std::fabs(out[i] - want) > 1e-3f * (1.0f + std::fabs(want))) {
      std::fprintf(stderr, "wrong result at %d: %f, expected %f\n", i, out[i], want);
      return 1;
    }
  }
  std::printf("smooth: %d elements x %d launches, result ok\n", n, iterations);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return 0;
}
