// Per-row scaling of a __half matrix, as when a dequantization or a routing
// weight is applied per token: x is a row-major __half matrix of rows = 8192
// by cols = 8192 (134 MB), s[r] a float per row, and out[r][c] = x[r][c] * s[r]
// with the product in float, stored as __half (134 MB). One thread per element,
// the row from a signed division i / cols by the run-time int cols, as a first
// port of the framework's reference loop writes it.
// Performance problem (prior): each thread has one 2-byte load in flight (64
// bytes per warp), so an SM holds at most 4 KB of input in flight while its
// share of the DRAM stream needs several times that, and every element pays the
// index math and the signed division.
//
// Variant block_64: 64-thread blocks instead of 256, the same kernel; 32 blocks
// of 64 = 2048 threads per SM either way.
#include <cuda_fp16.h>

#include "../../common/harness.cuh"

__global__ void scale_rows_half(__half* out, const __half* x, const float* s, int cols, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int r = i / cols;
  out[i] = __float2half(__half2float(x[i]) * s[r]);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 8192, cols = 8192, n = rows * cols;
  gpa::Lcg rng(229);
  // activations roughly normal (a sum of four uniforms), per-row scales 0.1-4
  std::vector<__half> x(static_cast<size_t>(n));
  std::vector<float> s(static_cast<size_t>(rows));
  for (size_t e = 0; e < x.size(); ++e) {
    const float v = rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) +
                    rng.uniform(-1.f, 1.f);
    x[e] = __float2half(1.5f * v);
  }
  for (int r = 0; r < rows; ++r) s[r] = rng.uniform(0.1f, 4.f);
  __half* dx = gpa::to_device(x);
  float* ds = gpa::to_device(s);
  // NaN bit patterns: a missed element fails the check
  __half* dout = gpa::device_alloc<__half>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(__half)));
  const int block = 64, grid = (n + block - 1) / block;
  auto launch = [&] { scale_rows_half<<<grid, block>>>(dout, dx, ds, cols, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element exactly against the same float product rounded to the nearest __half
  std::vector<__half> h = gpa::to_host(dout, size_t(n));
  std::vector<float> got(h.size());
  for (size_t e = 0; e < h.size(); ++e) got[e] = __half2float(h[e]);
  auto ref = [&](size_t e) {
    return double(__half2float(__float2half(__half2float(x[e]) * s[e / cols])));
  };
  gpa::check_close(got, ref, size_t(n), 0.0, 0.0, "out");

  gpa::time_kernel("scale_rows_half", opt, launch);
  return 0;
}
