// A bank of FIR filters, 8 outputs per thread. `in` and `coef` are only read,
// but they are plain pointers: the compiler must assume that each store to
// `out` may change them, so it reloads every input and coefficient for every
// output (8x the loads) and cannot use the read-only path.
#include "../../common/harness.cuh"

constexpr int kTaps = 16;
constexpr int kOut = 8;

__global__ void fir_bank(float* out, float* in, float* coef, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kOut;
  if (base + kOut > n) return;
#pragma unroll
  for (int o = 0; o < kOut; ++o) {
    float s = 0.f;
#pragma unroll
    for (int t = 0; t < kTaps; ++t) s += in[base + o + t] * coef[t];
    out[base + o] = s;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 25;
  std::vector<float> in(n + kTaps), coef(kTaps);
  gpa::Lcg rng(47);
  for (auto& v : in) v = rng.uniform(-1, 1);
  for (auto& v : coef) v = rng.uniform(-1, 1);
  float* din = gpa::to_device(in);
  float* dcoef = gpa::to_device(coef);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n / kOut + block - 1) / block;
  auto launch = [&] { fir_bank<<<grid, block>>>(dout, din, dcoef, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    double s = 0.0;
    for (int t = 0; t < kTaps; ++t) s += double(in[i + t]) * coef[t];
    return s;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-5, "filtered signal (every 3rd)", 3);

  gpa::time_kernel("fir_bank", opt, launch);
  return 0;
}
