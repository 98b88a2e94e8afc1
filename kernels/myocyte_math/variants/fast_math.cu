// Myocyte-like cell model step (seed 004, Rodinia myocyte): every thread
// integrates rate terms built from powf, expf and sinf. Compiled without
// --use_fast_math, each call runs the full-precision library sequence (range
// reduction, extra-precision logarithm) instead of one MUFU instruction.
#include "../../common/harness.cuh"

__global__ void solver_2(const float* __restrict__ y0, const float* __restrict__ rate, float* __restrict__ y,
                         int n, int steps, float dt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v0 = y0[i], w = rate[i];
  float acc = 0.f;
  for (int s = 0; s < steps; ++s) {
    const float t = s * dt;
    const float x = 1.5f + 0.5f * __cosf(0.37f * t);
    const float v = v0 + 8.f * x;
    acc += powf(x, 2.7f) * expf(-0.05f * v) * sinf(w * t);
  }
  y[i] = acc * dt;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 20, steps = 192;
  const float dt = 0.25f;
  std::vector<float> y0(n), rate(n);
  gpa::Lcg rng(29);
  for (int i = 0; i < n; ++i) y0[i] = rng.uniform(-80.f, -40.f), rate[i] = rng.uniform(0.1f, 4.f);
  float* dy0 = gpa::to_device(y0);
  float* drate = gpa::to_device(rate);
  float* dy = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { solver_2<<<grid, block>>>(dy0, drate, dy, n, steps, dt); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dy, n);
  auto ref = [&](size_t i) {
    double acc = 0.0;
    for (int s = 0; s < steps; ++s) {
      const float t = s * dt;
      const double x = 1.5 + 0.5 * std::cos(0.37 * t);
      const double v = y0[i] + 8.0 * x;
      acc += std::pow(x, 2.7) * std::exp(-0.05 * v) * std::sin(double(rate[i]) * t);
    }
    return acc * dt;
  };
  // loose enough for the fast-math intrinsics of the improved variant
  gpa::check_close(got, ref, got.size(), 2e-3, 5e-2, "integrated rates (every 29th)", 29);

  gpa::time_kernel("solver_2", opt, launch);
  return 0;
}
