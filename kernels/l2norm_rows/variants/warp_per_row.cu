// In-place row-wise L2 normalization of a batch of embeddings, as
// torch.nn.functional.normalize(x, p=2, dim=1) computes it:
// x_i <- x_i / max(|x_i|, eps), eps = 1e-12. x is 2^18 rows of D = 256 floats
// (256 MB, row-major); D is a run-time argument. One thread per row, as a first
// port of the CPU loop: it walks its row once with scalar loads to sum the
// squares, then a second time to divide each element by the norm and store it.
// Performance problem: at every step the 32 lanes of a warp read (and in the
// second walk write) 32 rows 1 KB apart, so each load and store touches 32 lines
// (one 4-byte word per lane).
//
// Variant warp_per_row: one warp per row, lane l reads elements l, l + 32, ...
// of the row in both walks: every load and store of x is one 128-byte line per
// warp; the sum of squares is reduced across the warp with shuffles, every lane
// gets the norm. 32x the threads in the launch.
#include "../../common/harness.cuh"

__global__ void l2norm_rows(float* x, int n, int d) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per row
  const int lane = threadIdx.x % 32;
  if (i >= n) return;
  float* row = x + size_t(i) * d;
  float ss = 0.f;
  for (int k = lane; k < d; k += 32) {
    const float v = row[k];
    ss += v * v;
  }
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float nrm = fmaxf(sqrtf(ss), 1e-12f);
  for (int k = lane; k < d; k += 32) {
    row[k] = row[k] / nrm;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 18, d = 256;
  gpa::Lcg rng(91);
  // rows of uniform noise scaled by a per-row factor in [0.01, 10), so that the
  // norms spread over about three decades; every 4096th row is all zeros (the
  // eps clamp: it must stay zero)
  std::vector<float> x(size_t(n) * d);
  for (int i = 0; i < n; ++i) {
    const float s = (i % 4096 == 7) ? 0.f : 0.01f + rng.uniform(0.f, 1.f) * rng.uniform(0.f, 10.f);
    for (int k = 0; k < d; ++k) x[size_t(i) * d + k] = s * rng.uniform(-1.f, 1.f);
  }
  float* dx = gpa::to_device(x);
  const int block = 256, grid = (n * 32 + block - 1) / block;  // a warp per row
  auto launch = [&] { l2norm_rows<<<grid, block>>>(dx, n, d); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element against a double reference (the timed launches below then
  // renormalize rows that already have unit norm: the same work, the same result)
  std::vector<float> got = gpa::to_host(dx, size_t(n) * d);
  std::vector<double> inv(n);
  for (int i = 0; i < n; ++i) {
    double ss = 0.0;
    for (int k = 0; k < d; ++k) ss += double(x[size_t(i) * d + k]) * x[size_t(i) * d + k];
    inv[i] = 1.0 / std::max(std::sqrt(ss), 1e-12);
  }
  auto ref = [&](size_t e) { return double(x[e]) * inv[e / d]; };
  gpa::check_close(got, ref, size_t(n) * d, 1e-5, 1e-7, "x");

  gpa::time_kernel("l2norm_rows", opt, launch);
  return 0;
}
