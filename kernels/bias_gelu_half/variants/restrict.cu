// Transformer MLP epilogue: the first GEMM of a feed-forward block leaves x, a
// row-major __half matrix of rows = 8192 tokens by cols = 8192 hidden units
// (134 MB), and this kernel adds the per-column bias and applies GELU in its
// exact erf form, out[r][c] = gelu(x[r][c] + bias[c]) with gelu(v) = 0.5 v
// (1 + erf(v / sqrt 2)), computed in float and stored as __half (134 MB). One
// thread per element, the column from i % cols with cols a run-time int, as a
// first port of the framework's reference loop writes it.
// Performance problem (prior): each thread has one 2-byte load in flight (64
// bytes per warp), so an SM holds at most 4 KB of input in flight while its
// share of the DRAM stream needs several times that; the signed modulo and the
// erff polynomial are issued by every thread for every element.
//
// Variant restrict: __restrict__ on out, const __restrict__ on x and bias; the two
// loads become LDG.E.U16.CONSTANT, nothing else changes (no loop, nothing
// reloaded).
#include <cuda_fp16.h>

#include "../../common/harness.cuh"

__global__ void bias_gelu_half(__half* __restrict__ out, const __half* __restrict__ x,
                               const __half* __restrict__ bias, int cols, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int c = i % cols;
  const float v = __half2float(x[i]) + __half2float(bias[c]);
  out[i] = __float2half(0.5f * v * (1.0f + erff(v * 0.70710678f)));
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 8192, cols = 8192, n = rows * cols;
  gpa::Lcg rng(211);
  // pre-activations roughly normal (a sum of four uniforms, sd ~1.2), biases small
  std::vector<__half> x(static_cast<size_t>(n)), bias(static_cast<size_t>(cols));
  for (size_t e = 0; e < x.size(); ++e) {
    const float s = rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) +
                    rng.uniform(-1.f, 1.f);
    x[e] = __float2half(1.1f * s);
  }
  for (int c = 0; c < cols; ++c) bias[c] = __float2half(rng.uniform(-0.5f, 0.5f));
  __half* dx = gpa::to_device(x);
  __half* dbias = gpa::to_device(bias);
  // NaN bit patterns: a missed element fails the check
  __half* dout = gpa::device_alloc<__half>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(__half)));
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { bias_gelu_half<<<grid, block>>>(dout, dx, dbias, cols, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element against a double reference of the exact GELU of the same half
  // inputs; the tolerance is the rounding to __half (2^-11 relative) and a few
  // float ulps of erff
  std::vector<__half> h = gpa::to_host(dout, size_t(n));
  std::vector<float> got(h.size());
  for (size_t e = 0; e < h.size(); ++e) got[e] = __half2float(h[e]);
  auto ref = [&](size_t e) {
    const double v = double(__half2float(x[e])) + double(__half2float(bias[e % cols]));
    return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  };
  gpa::check_close(got, ref, size_t(n), 1e-3, 1e-4, "out");

  gpa::time_kernel("bias_gelu_half", opt, launch);
  return 0;
}
