// Layer normalisation of 16384 rows of 4096 floats, one block of 1024 threads
// per row (4 values per thread, kept in registers): the mean and then the
// variance are each summed by a shared-memory tree (10 halving steps, a
// __syncthreads after each), then each value is normalised and scaled by
// gamma/beta. Two blocks fit on an SM; while a block walks its 22 barriers it
// has no loads in flight, so the SM's memory traffic stalls with it.
#include "../common/harness.cuh"

constexpr int kCols = 4096, kThreads = 1024, kPer = kCols / kThreads;

__global__ void __launch_bounds__(kThreads)
layernorm(float* out, const float* x, const float* gamma, const float* beta, float eps) {
  __shared__ float red[kThreads];
  const int tid = threadIdx.x;
  const size_t row = blockIdx.x;
  float v[kPer];
  float s = 0.f;
  for (int k = 0; k < kPer; ++k) {
    v[k] = x[row * kCols + tid + k * kThreads];
    s += v[k];
  }
  red[tid] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (tid < w) red[tid] += red[tid + w];
    __syncthreads();
  }
  const float mean = red[0] / kCols;
  __syncthreads();  // red[0] read by all before it is overwritten
  float q = 0.f;
  for (int k = 0; k < kPer; ++k) q += (v[k] - mean) * (v[k] - mean);
  red[tid] = q;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (tid < w) red[tid] += red[tid + w];
    __syncthreads();
  }
  const float rstd = rsqrtf(red[0] / kCols + eps);
  for (int k = 0; k < kPer; ++k) {
    const int c = tid + k * kThreads;
    out[row * kCols + c] = (v[k] - mean) * rstd * gamma[c] + beta[c];
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 16384;
  const float eps = 1e-5f;
  std::vector<float> x(size_t(rows) * kCols), gamma(kCols), beta(kCols);
  gpa::Lcg rng(101);
  for (auto& v : x) v = rng.uniform(-1, 3);
  for (auto& v : gamma) v = rng.uniform(0.5f, 1.5f);
  for (auto& v : beta) v = rng.uniform(-0.5f, 0.5f);
  float* dx = gpa::to_device(x);
  float* dgamma = gpa::to_device(gamma);
  float* dbeta = gpa::to_device(beta);
  float* dout = gpa::device_alloc<float>(x.size());
  auto launch = [&] { layernorm<<<rows, kThreads>>>(dout, dx, dgamma, dbeta, eps); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, x.size());
  std::vector<double> mean(rows), rstd(rows);
  for (int r = 0; r < rows; ++r) {
    const float* xr = &x[size_t(r) * kCols];
    double s = 0.0, q = 0.0;
    for (int c = 0; c < kCols; ++c) s += xr[c];
    mean[r] = s / kCols;
    for (int c = 0; c < kCols; ++c) q += (xr[c] - mean[r]) * (xr[c] - mean[r]);
    rstd[r] = 1.0 / std::sqrt(q / kCols + eps);
  }
  auto ref = [&](size_t i) {
    const size_t r = i / kCols, c = i % kCols;
    return (x[i] - mean[r]) * rstd[r] * gamma[c] + beta[c];
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-4, "normalised rows (every 5th)", 5);

  gpa::time_kernel("layernorm", opt, launch);
  return 0;
}
