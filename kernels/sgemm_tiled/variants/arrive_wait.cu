// Single-precision matrix multiply C = A B (row-major, no tensor cores), the
// textbook tiled kernel: 16x16 thread blocks, each thread computes one
// element of C, A and B pass through 16x16 shared-memory tiles.
// Performance problem: every FFMA needs its own element of B from shared
// memory (and one of A for every four), so the inner loop issues more shared
// loads than FMAs: the shared-memory pipe (MIO), not the FP32 units, sets the
// pace, at a small fraction of the SM's FMA throughput.
#include <cuda/barrier>

#include "../../common/harness.cuh"

constexpr int kTile = 16;

using block_barrier = cuda::barrier<cuda::thread_scope_block>;
#pragma nv_diag_suppress static_var_with_dynamic_init  // the barrier is set up by init() below

__global__ void sgemm_tiled(int m, int n, int k, const float* a, const float* b, float* c) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  __shared__ block_barrier done_reading;  // every thread has finished reading the current tiles
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  if (tx == 0 && ty == 0) init(&done_reading, kTile * kTile);
  __syncthreads();
  float av = a[size_t(row) * k + tx], bv = b[size_t(ty) * n + col];  // the first tile
  float sum = 0.f;
  for (int t = 0; t < k; t += kTile) {
    as[ty][tx] = av;
    bs[ty][tx] = bv;
    __syncthreads();
    for (int q = 0; q < kTile; ++q) sum += as[ty][q] * bs[q][tx];
    // split arrive and wait instead of the second __syncthreads(): arrive once
    // this thread has read the tiles, issue the next tile's loads, then wait
    // for every thread to have arrived before the tiles are overwritten
    block_barrier::arrival_token token = done_reading.arrive();
    if (t + kTile < k) {
      av = a[size_t(row) * k + t + kTile + tx];
      bv = b[size_t(t + kTile + ty) * n + col];
    }
    done_reading.wait(std::move(token));
  }
  c[size_t(row) * n + col] = sum;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int m = 1536, n = 1536, k = 1536;
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n);
  gpa::Lcg rng(83);
  for (auto& v : a) v = rng.uniform(-1.f, 1.f);
  for (auto& v : b) v = rng.uniform(-1.f, 1.f);
  float* da = gpa::to_device(a);
  float* db = gpa::to_device(b);
  float* dc = gpa::device_alloc<float>(size_t(m) * n);
  const dim3 block(kTile, kTile), grid(n / kTile, m / kTile);
  auto launch = [&] { sgemm_tiled<<<grid, block>>>(m, n, k, da, db, dc); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dc, size_t(m) * n);
  auto ref = [&](size_t i) {
    const size_t r = i / n, cc = i % n;
    double s = 0.0;
    for (int q = 0; q < k; ++q) s += double(a[r * k + q]) * b[size_t(q) * n + cc];
    return s;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-3, "C (every 997th element)", 997);

  gpa::time_kernel("sgemm_tiled", opt, launch);
  return 0;
}
