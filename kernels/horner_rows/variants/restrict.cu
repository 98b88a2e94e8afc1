// Horner evaluation of one polynomial per row: row r of C (row-major, 8448 x 4096 floats, 138 MB)
// holds the 4096 coefficients of p_r, highest power first, and p_r is evaluated at t[r].
// One thread per row, 33 blocks of 256 threads on a 132-SM GPU: each thread walks its own row,
// so the 32 lanes of a warp load from 32 rows 16 KB apart (every load touches 32 lines where a
// coalesced one touches 1), and the L1/LSU of the 33 busy SMs does 32 tag lookups per request
// while 99 SMs idle.
#include "../../common/harness.cuh"

__global__ void horner_rows(float* __restrict__ y, const float* __restrict__ C, const float* __restrict__ t, int m, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  const float x = t[r];
  const float* __restrict__ c = C + size_t(r) * n;
  float p = 0.f;
  for (int k = 0; k < n; ++k)
    p = fmaf(p, x, c[k]);
  y[r] = p;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int block = 256, m = 33 * block, n = 4096;
  std::vector<float> C(size_t(m) * n), t(m);
  gpa::Lcg rng(97);
  for (auto& v : C) v = rng.uniform(-1, 1);
  for (auto& v : t) v = rng.uniform(-0.98f, 0.98f);
  float* dC = gpa::to_device(C);
  float* dt = gpa::to_device(t);
  float* dy = gpa::device_alloc<float>(m);
  const int grid = (m + block - 1) / block;
  auto launch = [&] { horner_rows<<<grid, block>>>(dy, dC, dt, m, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dy, m);
  auto ref = [&](size_t r) {
    double p = 0.0;
    for (int k = 0; k < n; ++k) p = p * t[r] + C[r * n + k];
    return p;
  };
  gpa::check_close(got, ref, m, 1e-3, 1e-3, "p(t) per row");

  gpa::time_kernel("horner_rows", opt, launch);
  return 0;
}
