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
// Variant float4: the same thread per row walks its row as float4 (rows are
// 16-byte aligned when d % 4 == 0, as embedding widths are; a scalar tail takes
// the rest): 64 LDG.E.128 and 64 STG.E.128 per row instead of 256 LDG.E and 256
// STG.E, each request still touching 32 lines. The squares are summed in the
// same order as the original's.
#include "../../common/harness.cuh"

__global__ void l2norm_rows(float* x, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* row = x + size_t(i) * d;
  float4* row4 = reinterpret_cast<float4*>(row);
  const int d4 = d / 4;
  float ss = 0.f;
  for (int k = 0; k < d4; ++k) {
    const float4 v = row4[k];
    ss += v.x * v.x;
    ss += v.y * v.y;
    ss += v.z * v.z;
    ss += v.w * v.w;
  }
  for (int k = 4 * d4; k < d; ++k) ss += row[k] * row[k];
  const float nrm = fmaxf(sqrtf(ss), 1e-12f);
  for (int k = 0; k < d4; ++k) {
    float4 v = row4[k];
    v.x = v.x / nrm;
    v.y = v.y / nrm;
    v.z = v.z / nrm;
    v.w = v.w / nrm;
    row4[k] = v;
  }
  for (int k = 4 * d4; k < d; ++k) row[k] = row[k] / nrm;
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
  const int block = 256, grid = (n + block - 1) / block;
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
