// Horner evaluation of one polynomial per row: row r of C (row-major, 8448 x 4096 floats, 138 MB)
// holds the 4096 coefficients of p_r, highest power first, and p_r is evaluated at t[r].
// One thread per row, 33 blocks of 256 threads on a 132-SM GPU: each thread walks its own row,
// so the 32 lanes of a warp load from 32 rows 16 KB apart (every load touches 32 lines where a
// coalesced one touches 1), and the L1/LSU of the 33 busy SMs does 32 tag lookups per request
// while 99 SMs idle.
#include "../../common/harness.cuh"

__global__ void horner_rows(float* y, const float* C, const float* t, int m, int n) {
  // one warp per row (n a multiple of 32): lane l evaluates the coefficients l, l + 32, ... by
  // Horner in x^32, one 128-byte line per warp load; its sum sits 31 - l powers above the row's
  // last coefficient, so it is scaled by x^(31 - l) before a shuffle reduction
  const int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= m) return;
  const float x = t[r];
  float x32 = x;
  for (int i = 0; i < 5; ++i) x32 *= x32;
  const float* c = C + size_t(r) * n;
  float q = 0.f;
  for (int k = lane; k < n; k += 32)
    q = fmaf(q, x32, c[k]);
  float w = 1.f, b = x;
  for (int e = 31 - lane; e; e >>= 1, b *= b)
    if (e & 1) w *= b;
  float p = q * w;
  for (int off = 16; off > 0; off /= 2) p += __shfl_down_sync(0xffffffffu, p, off);
  if (lane == 0) y[r] = p;
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
  const int grid = (m * 32 + block - 1) / block;  // 32 threads per row
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
