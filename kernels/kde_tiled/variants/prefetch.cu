// Epanechnikov kernel sums of 2^23 samples at 16 centres in 16 dimensions
// (kernel density at 16 query points, RBF-layer / soft-count sums): every
// block sums k(x, c) = max(0, 1 - |x - c|^2 / h^2) over its 2048 samples for
// each centre, one kernel-matrix entry per thread per step: a 16x16 block
// stages a tile of 16 samples (16 x 16 floats) in shared memory, thread (ty,
// tx) pairs sample ty with centre tx, whose coordinates it keeps in registers.
// Performance problem: each tile costs one DRAM round trip that nothing
// overlaps: every warp loads its 128 bytes, stores them to shared memory (a
// wait for its own load) and waits at the barrier for the slowest warp's; the
// arithmetic per tile is short, so the tile loads are the critical path and
// 40 resident warps per SM keep too few bytes in flight to fill DRAM.
#include "../../common/harness.cuh"

constexpr int kDim = 16, kTile = 16, kCentres = 16;

__global__ void kde_tiles(const float* x, const float* centres, float* partial, int ntiles, float inv_h2) {
  __shared__ float xs[kTile][kDim];
  __shared__ float red[kTile][kCentres];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const size_t row0 = size_t(blockIdx.x) * ntiles * kTile;
  float c[kDim];
  for (int q = 0; q < kDim; ++q) c[q] = centres[tx * kDim + q];
  float acc = 0.f;
  float v = x[(row0 + ty) * kDim + tx];  // the first tile's element
  for (int t = 0; t < ntiles; ++t) {
    xs[ty][tx] = v;
    __syncthreads();
    // the next tile's element, in flight during this tile's arithmetic (the last
    // iteration reloads its own tile: unconditional, so nvcc issues it here)
    v = x[(row0 + min(t + 1, ntiles - 1) * kTile + ty) * kDim + tx];
    float d2 = 0.f;
    for (int q = 0; q < kDim; ++q) {
      const float d = xs[ty][q] - c[q];
      d2 += d * d;
    }
    acc += fmaxf(0.f, 1.f - d2 * inv_h2);
    __syncthreads();
  }
  red[ty][tx] = acc;
  __syncthreads();
  if (ty == 0) {
    float s = 0.f;
    for (int r = 0; r < kTile; ++r) s += red[r][tx];
    partial[blockIdx.x * kCentres + tx] = s;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 23, rows_per_block = 2048, ntiles = rows_per_block / kTile, blocks = n / rows_per_block;
  const float inv_h2 = 0.1f;
  std::vector<float> x(size_t(n) * kDim), centres(kCentres * kDim);
  gpa::Lcg rng(29);
  for (auto& v : centres) v = rng.uniform(-1.f, 1.f);
  for (auto& v : x) v = rng.uniform(-1.f, 1.f);
  float* dx = gpa::to_device(x);
  float* dc = gpa::to_device(centres);
  float* dpartial = gpa::device_alloc<float>(size_t(blocks) * kCentres);
  auto launch = [&] { kde_tiles<<<blocks, dim3(kCentres, kTile)>>>(dx, dc, dpartial, ntiles, inv_h2); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // partial[b * 16 + j]: the kernel sum of block b's 2048 samples at centre j, in double
  std::vector<float> got = gpa::to_host(dpartial, size_t(blocks) * kCentres);
  auto ref = [&](size_t i) {
    const size_t b = i / kCentres, j = i % kCentres;
    double s = 0.0;
    for (size_t r = b * rows_per_block; r < (b + 1) * rows_per_block; ++r) {
      double d2 = 0.0;
      for (int q = 0; q < kDim; ++q) {
        const double d = double(x[r * kDim + q]) - centres[j * kDim + q];
        d2 += d * d;
      }
      s += std::max(0.0, 1.0 - d2 * inv_h2);
    }
    return s;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-3, "kernel sums (every 61st)", 61);

  gpa::time_kernel("kde_tiles", opt, launch);
  return 0;
}
