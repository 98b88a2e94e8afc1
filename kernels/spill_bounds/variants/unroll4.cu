// Many polynomials evaluated at once: each thread keeps 48 running Horner
// accumulators. `__launch_bounds__(256, 8)` asks for 8 blocks per SM, which caps
// the kernel at 32 registers per thread: the accumulators do not fit and are
// spilled to local memory (STL/LDL around every update).
#include "../../common/harness.cuh"

constexpr int kState = 48;
constexpr int kSteps = 64;

__constant__ float c_coef[kState];

__global__ void __launch_bounds__(256, 8)
horner_bank(const float* __restrict__ x, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[kState];
#pragma unroll
  for (int k = 0; k < kState; ++k) acc[k] = 0.f;
#pragma unroll 4
  for (int s = 0; s < kSteps; ++s) {
    const float v = x[s * n + i];
#pragma unroll
    for (int k = 0; k < kState; ++k) acc[k] = acc[k] * v + c_coef[k] * (k + 1);
  }
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kState; ++k) sum += acc[k] * (k & 1 ? -1.f : 1.f);
  out[i] = sum;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 20;
  std::vector<float> x(size_t(kSteps) * n), coef(kState);
  gpa::Lcg rng(37);
  for (auto& v : x) v = rng.uniform(-0.9f, 0.9f);
  for (auto& v : coef) v = rng.uniform(-1.f, 1.f);
  CUDA_CHECK(cudaMemcpyToSymbol(c_coef, coef.data(), sizeof(float) * kState));
  float* dx = gpa::to_device(x);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { horner_bank<<<grid, block>>>(dx, dout, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    double acc[kState] = {0.0};
    for (int s = 0; s < kSteps; ++s)
      for (int k = 0; k < kState; ++k) acc[k] = acc[k] * x[size_t(s) * n + i] + double(coef[k]) * (k + 1);
    double sum = 0.0;
    for (int k = 0; k < kState; ++k) sum += acc[k] * (k & 1 ? -1.0 : 1.0);
    return sum;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-3, "polynomial sums (every 11th)", 11);

  gpa::time_kernel("horner_bank", opt, launch);
  return 0;
}
