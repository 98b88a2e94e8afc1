// gemv_rows at 25 MB (L2 residency calibration): y = A x, A row-major (40960 x 160 floats),
// one thread per row. Each thread walks its own row, so the 32 lanes of a warp
// load from 32 rows 640 B apart: every load instruction touches 32 sectors in 32
// different cache lines where a coalesced one touches 4 in 1. The lines mostly
// hit in L1 afterwards (each serves 8 consecutive k), but L1 processes 32 tag
// lookups per request: the kernel is bound by L1/LSU work, not by DRAM.
#include "../common/harness.cuh"

__global__ void gemv_rows(float* y, const float* A, const float* x, int m, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  float s = 0.f;
  for (int k = 0; k < n; ++k)
    s += A[size_t(r) * n + k] * x[k];
  y[r] = s;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int m = 40960, n = 160;
  std::vector<float> A(size_t(m) * n), x(n);
  gpa::Lcg rng(83);
  for (auto& v : A) v = rng.uniform(-1, 1);
  for (auto& v : x) v = rng.uniform(-1, 1);
  float* dA = gpa::to_device(A);
  float* dx = gpa::to_device(x);
  float* dy = gpa::device_alloc<float>(m);
  const int block = 256, grid = (m + block - 1) / block;
  auto launch = [&] { gemv_rows<<<grid, block>>>(dy, dA, dx, m, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dy, m);
  auto ref = [&](size_t r) {
    double s = 0.0;
    for (int k = 0; k < n; ++k) s += double(A[r * n + k]) * x[k];
    return s;
  };
  gpa::check_close(got, ref, m, 1e-4, 5e-4, "y (every 3rd row)", 3);

  gpa::time_kernel("gemv_rows", opt, launch);
  return 0;
}
