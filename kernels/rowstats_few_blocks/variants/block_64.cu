// Per-row statistics (mean and reciprocal standard deviation, as a layer norm
// computes before it normalises) over 12288 rows of 768 floats, one thread per
// row, one pass: each thread sums its row and the row's squares.
// Performance problem: neighbouring threads walk rows 3 KB apart, so every warp
// load touches 32 cache lines (32 sectors for 128 useful bytes); and the grid is
// 48 blocks of 256 threads, on 48 of the 132 SMs, whose L1s carry all of it.
// Written on 2026-11-25 (evening) after the busy-SM models (analysis/spread.py,
// lanewalk.rewrite_spread) as an out-of-sample check of them: no model was
// changed after its timing.
//
// Variant block_64: 64-thread blocks: the same 384 warps as 192 blocks, on
// every SM instead of 48 of them.
#include "../../common/harness.cuh"

__global__ void row_stats(float* mean, float* rstd, const float* in, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* x = in + size_t(r) * cols;
  float s = 0.f, q = 0.f;
  for (int i = 0; i < cols; ++i) {
    const float v = x[i];
    s += v;
    q += v * v;
  }
  const float m = s / cols;
  mean[r] = m;
  rstd[r] = rsqrtf(fmaxf(q / cols - m * m, 0.f) + 1e-5f);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 12288, cols = 768;
  const size_t n = size_t(rows) * cols;
  std::vector<float> x(n);
  gpa::Lcg rng(31);
  for (auto& v : x) v = rng.uniform(-2.f, 3.f);
  float* din = gpa::to_device(x);
  float* dmean = gpa::device_alloc<float>(rows);
  float* drstd = gpa::device_alloc<float>(rows);
  const int block = 64, grid = (rows + block - 1) / block;
  auto launch = [&] { row_stats<<<grid, block>>>(dmean, drstd, din, rows, cols); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got_mean = gpa::to_host(dmean, rows), got_rstd = gpa::to_host(drstd, rows);
  std::vector<double> want_mean(rows), want_rstd(rows);
  for (int r = 0; r < rows; ++r) {
    double s = 0, q = 0;
    for (int i = 0; i < cols; ++i) {
      const double v = x[size_t(r) * cols + i];
      s += v;
      q += v * v;
    }
    const double m = s / cols;
    want_mean[r] = m;
    want_rstd[r] = 1.0 / std::sqrt(std::max(q / cols - m * m, 0.0) + 1e-5);
  }
  gpa::check_close(got_mean, [&](size_t i) { return want_mean[i]; }, rows, 1e-3, 1e-4, "mean");
  gpa::check_close(got_rstd, [&](size_t i) { return want_rstd[i]; }, rows, 1e-3, 1e-4, "rstd");

  gpa::time_kernel("row_stats", opt, launch);
  return 0;
}
