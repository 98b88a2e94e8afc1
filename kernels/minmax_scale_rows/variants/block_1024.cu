// Per-row min-max scaling of a feature matrix (sklearn's MinMaxScaler applied per
// sample, image-patch normalization): x is N = 2^17 rows of D = 384 floats (201 MB,
// row-major), out[i][k] = (x[i][k] - min_i) * (1 / (max_i - min_i + eps)) written
// to a separate array. D is a run-time argument. One thread per row, as a first
// port of the CPU loop: it walks its row once for the min and max, computes one
// reciprocal, then walks the row again to scale and store it.
// Performance problem: at every step the 32 lanes of a warp read (and in the second
// walk write) 32 rows 1536 B apart, so each load and store touches 32 lines; the
// warp's 32 rows (48 KB) do not stay in the L1 between the two walks.
//
// Variant block_1024: 1024-thread blocks instead of 256 (same threads in all).
#include "../../common/harness.cuh"

__global__ void minmax_scale_rows(float* out, const float* x, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* row = x + size_t(i) * d;
  float* orow = out + size_t(i) * d;
  float mn = INFINITY, mx = -INFINITY;
  for (int k = 0; k < d; ++k) {
    const float v = row[k];
    mn = fminf(mn, v);
    mx = fmaxf(mx, v);
  }
  const float inv = 1.0f / (mx - mn + 1e-6f);
  for (int k = 0; k < d; ++k) {
    orow[k] = (row[k] - mn) * inv;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 17, d = 384;
  gpa::Lcg rng(61);
  // each row an offset plus uniform noise of its own width, so that the rows'
  // ranges (and so their scales) differ: offset in [-4, 4), width in [0.25, 8)
  std::vector<float> x(size_t(n) * d);
  for (int i = 0; i < n; ++i) {
    const float a = rng.uniform(-4.f, 4.f), s = rng.uniform(0.25f, 8.f);
    for (int k = 0; k < d; ++k) x[size_t(i) * d + k] = a + s * rng.uniform(0.f, 1.f);
  }
  float* dx = gpa::to_device(x);
  float* dout = gpa::device_alloc<float>(size_t(n) * d);
  const int block = 1024, grid = (n + block - 1) / block;
  auto launch = [&] { minmax_scale_rows<<<grid, block>>>(dout, dx, n, d); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every element, from each row's exact min and max
  std::vector<float> got = gpa::to_host(dout, size_t(n) * d);
  std::vector<double> lo(n), scale(n);
  for (int i = 0; i < n; ++i) {
    double mn = x[size_t(i) * d], mx = mn;
    for (int k = 1; k < d; ++k) {
      mn = std::min(mn, double(x[size_t(i) * d + k]));
      mx = std::max(mx, double(x[size_t(i) * d + k]));
    }
    lo[i] = mn;
    scale[i] = 1.0 / (mx - mn + 1e-6);
  }
  auto ref = [&](size_t j) { return (double(x[j]) - lo[j / d]) * scale[j / d]; };
  gpa::check_close(got, ref, size_t(n) * d, 1e-5, 1e-6, "out");

  gpa::time_kernel("minmax_scale_rows", opt, launch);
  return 0;
}
