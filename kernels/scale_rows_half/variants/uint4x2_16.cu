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
// Variant uint4x2_16: each thread maps 16 consecutive elements of one row (cols is a
// multiple of 16), read as two uint4 (two LDG.E.128: 32 contiguous bytes per lane, each warp access
// touching 32 sectors and using half of each, the two together all of them)
// and written as two uint4 (two STG.E.128), with one division and one scale load per 16 elements;
// the product still in float per element; 1/16 of the threads.
#include <cuda_fp16.h>

#include "../../common/harness.cuh"

union H8 {  // 8 halves as one 16-byte vector
  uint4 u;
  __half2 h[4];
};

__global__ void scale_rows_half(__half* out, const __half* x, const float* s, int cols, int n) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // elements 16j .. 16j + 15 (one row)
  const int i = 16 * j;
  if (i >= n) return;
  const int r = i / cols;
  const float f = s[r];
  H8 a[2], o[2];
#pragma unroll
  for (int m = 0; m < 2; ++m) a[m].u = reinterpret_cast<const uint4*>(x)[2 * j + m];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 v = __half22float2(a[m].h[k]);
      o[m].h[k] = __floats2half2_rn(v.x * f, v.y * f);
    }
#pragma unroll
  for (int m = 0; m < 2; ++m) reinterpret_cast<uint4*>(out)[2 * j + m] = o[m].u;
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
  if (cols % 16) gpa::fail("cols must be a multiple of 16 for 16-byte vectors");
  const int block = 256, grid = (n / 16 + block - 1) / block;
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
