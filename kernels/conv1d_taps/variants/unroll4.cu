// 1D convolution with a run-time tap count (33 here), 8 consecutive outputs
// per thread, `in` and `coef` through plain pointers. Each output's tap loop
// ends in a store to `out`, so the compiler must assume `in` and `coef` changed
// and reloads every coefficient for every output; but the tap count is not
// known at compile time, so even with `__restrict__` it could not keep them in
// registers (the eight tap loops stay separate loops). The real cost is the
// layout: thread k owns outputs 8k..8k+7, so the lanes of a warp read `in` 32
// bytes apart: each load touches 32 sectors in 8 lines instead of 4 in 1.
#include "../../common/harness.cuh"

constexpr int kOut = 8;

__global__ void conv1d(float* out, float* in, float* coef, int n, int taps) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kOut;
  if (base + kOut > n) return;
  for (int o = 0; o < kOut; ++o) {
    float s = 0.f;
#pragma unroll 4
    for (int t = 0; t < taps; ++t)
      s += in[base + o + t] * coef[t];
    out[base + o] = s;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24, taps = 33;
  std::vector<float> in(n + taps), coef(taps);
  gpa::Lcg rng(97);
  for (auto& v : in) v = rng.uniform(-1, 1);
  for (auto& v : coef) v = rng.uniform(-1, 1);
  float* din = gpa::to_device(in);
  float* dcoef = gpa::to_device(coef);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n / kOut + block - 1) / block;
  auto launch = [&] { conv1d<<<grid, block>>>(dout, din, dcoef, n, taps); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    double s = 0.0;
    for (int t = 0; t < taps; ++t) s += double(in[i + t]) * coef[t];
    return s;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 2e-5, "convolved signal (every 7th)", 7);

  gpa::time_kernel("conv1d", opt, launch);
  return 0;
}
