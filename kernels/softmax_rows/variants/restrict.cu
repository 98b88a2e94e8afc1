// Row-wise softmax over 16384 rows of 1024 floats, one thread per row: three
// passes over the row (max, sum of expf, normalise and store). Neighbouring
// threads work on rows 4 KB apart, so every warp load or store touches 32
// different cache lines (32 sectors for 128 useful bytes), and a row read in
// one pass is gone from L1 by the next. The grid is also small: 16384 threads
// are 64 blocks of 256, on 64 of the 132 SMs.
//
// Variant restrict: __restrict__ on out, const __restrict__ on in.
#include "../../common/harness.cuh"

__global__ void softmax_rows(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* x = in + size_t(r) * cols;
  float* y = out + size_t(r) * cols;
  float m = -3.4e38f;
  for (int i = 0; i < cols; ++i) m = fmaxf(m, x[i]);
  float s = 0.f;
  for (int i = 0; i < cols; ++i) s += expf(x[i] - m);
  const float inv = 1.f / s;
  for (int i = 0; i < cols; ++i) y[i] = expf(x[i] - m) * inv;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 16384, cols = 1024;
  const size_t n = size_t(rows) * cols;
  std::vector<float> x(n);
  gpa::Lcg rng(19);
  for (auto& v : x) v = rng.uniform(-8.f, 8.f);
  float* din = gpa::to_device(x);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (rows + block - 1) / block;
  auto launch = [&] { softmax_rows<<<grid, block>>>(dout, din, rows, cols); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double for every 8th row (all of its columns)
  std::vector<float> got = gpa::to_host(dout, n), got_rows;
  std::vector<double> want_rows;
  for (int r = 0; r < rows; r += 8) {
    const float* xr = &x[size_t(r) * cols];
    double m = xr[0], s = 0;
    for (int i = 1; i < cols; ++i) m = std::max(m, double(xr[i]));
    for (int i = 0; i < cols; ++i) s += std::exp(xr[i] - m);
    for (int i = 0; i < cols; ++i) want_rows.push_back(std::exp(xr[i] - m) / s);
    got_rows.insert(got_rows.end(), got.begin() + size_t(r) * cols, got.begin() + size_t(r + 1) * cols);
  }
  gpa::check_close(got_rows, [&](size_t i) { return double(want_rows[i]); }, got_rows.size(), 1e-4, 1e-9,
                   "softmax (every 8th row)");

  gpa::time_kernel("softmax_rows", opt, launch);
  return 0;
}
