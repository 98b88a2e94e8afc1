// Feature standardisation (z-scores, clipped to +-3 sigma) of a samples x features matrix stored
// row-major (one row per sample), each feature's mean and 1/sigma computed beforehand. One thread
// per feature walks down all the samples. Consecutive threads read consecutive floats of a row
// (coalesced), but 2048 features are 2048 threads: 32 blocks of 64 for 132 SMs, two warps on each
// busy SM, and each warp's 4096 rows are a serial chain: x and out are plain pointers, so a row's
// load cannot move above the previous row's store, and each row's miss is waited for alone.
//
// Variant restrict: __restrict__ on out and the inputs, so the compiler may move later rows'
// loads above earlier rows' stores (the loop has a run-time trip count).
#include "../../common/harness.cuh"

__global__ void standardize(float* __restrict__ out, const float* __restrict__ x, const float* __restrict__ mean,
                            const float* __restrict__ inv_sd, int n, int f) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= f) return;
  const float m = mean[j], s = inv_sd[j];
  for (int i = 0; i < n; ++i) {
    const float z = (x[size_t(i) * f + j] - m) * s;
    out[size_t(i) * f + j] = fminf(fmaxf(z, -3.f), 3.f);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 4096, f = 2048;
  const size_t cells = size_t(n) * f;
  std::vector<float> x(cells), mean(f), inv_sd(f);
  gpa::Lcg rng(47);
  for (int j = 0; j < f; ++j) mean[j] = rng.uniform(-2.f, 2.f);     // per-feature offset and scale
  for (int j = 0; j < f; ++j) inv_sd[j] = rng.uniform(0.5f, 4.f);
  for (size_t c = 0; c < cells; ++c) x[c] = mean[c % f] + inv_sd[c % f] * rng.uniform(-1.f, 1.f);
  std::vector<double> s(f, 0.0), ss(f, 0.0);                          // two-pass mean and variance
  for (size_t c = 0; c < cells; ++c) s[c % f] += x[c];
  for (int j = 0; j < f; ++j) s[j] /= n;
  for (size_t c = 0; c < cells; ++c) ss[c % f] += (x[c] - s[c % f]) * (x[c] - s[c % f]);
  for (int j = 0; j < f; ++j) {
    mean[j] = float(s[j]);
    inv_sd[j] = float(1.0 / std::sqrt(ss[j] / n + 1e-12));
  }
  float* dx = gpa::to_device(x);
  float* dmean = gpa::to_device(mean);
  float* dinv = gpa::to_device(inv_sd);
  float* dout = gpa::device_alloc<float>(cells);
  const int block = 64, grid = (f + block - 1) / block;
  auto launch = [&] { standardize<<<grid, block>>>(dout, dx, dmean, dinv, n, f); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, cells);
  auto ref = [&](size_t c) {
    const double z = (double(x[c]) - mean[c % f]) * inv_sd[c % f];
    return std::min(std::max(z, -3.0), 3.0);
  };
  gpa::check_close(got, ref, cells, 1e-5, 1e-5, "standardised matrix (every 3rd)", 3);

  gpa::time_kernel("standardize", opt, launch);
  return 0;
}
