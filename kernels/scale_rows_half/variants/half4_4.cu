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
// Variant half4_4: each thread maps 4 consecutive elements of one row (cols is a
// multiple of 16), read as one uint2 (LDG.E.64: 8 bytes per lane, 256 contiguous bytes per warp)
// and written as one uint2 (STG.E.64), with one division and one scale load per 4 elements;
// the product still in float per element; 1/4 of the threads.
#include <cuda_fp16.h>

#include "../../common/harness.cuh"

union H4 {  // 4 halves as one 8-byte vector
  uint2 u;
  __half2 h[2];
};

__global__ void scale_rows_half(__half* out, const __half* x, const float* s, int cols, int n) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // elements 4j .. 4j + 3 (one row)
  const int i = 4 * j;
  if (i >= n) return;
  const int r = i / cols;
  const float f = s[r];
  H4 a, o;
  a.u = reinterpret_cast<const uint2*>(x)[j];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const float2 v = __half22float2(a.h[k]);
    o.h[k] = __floats2half2_rn(v.x * f, v.y * f);
  }
  reinterpret_cast<uint2*>(out)[j] = o.u;
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
  if (cols % 4) gpa::fail("cols must be a multiple of 4 for 8-byte vectors");
  const int block = 256, grid = (n / 4 + block - 1) / block;
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
