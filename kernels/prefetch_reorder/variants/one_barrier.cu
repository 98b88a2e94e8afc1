// A tiled filter whose global load is used right after it is issued (seed
// 004, b+tree findRangeK): each step loads one value per thread, stores it to
// shared memory at once and waits at the barrier. The compiler cannot move the
// next step's load above __syncthreads(), so every step pays the full latency.
#include "../../common/harness.cuh"

constexpr int kBlock = 256;
constexpr int kTaps = 32;
constexpr int kRows = 64;  // distinct input rows, reused cyclically (power of two)

__constant__ float c_w[kTaps];

__global__ void tiled_filter(const float* in, float* out, int ncols, int nsteps) {
  __shared__ float tile[2][kBlock];  // step s uses tile[s & 1]: one barrier per step
  const int tid = threadIdx.x;
  const int col = blockIdx.x * kBlock + tid;
  float acc = 0.f;
  for (int step = 0; step < nsteps; ++step) {
    const float v = in[(step & (kRows - 1)) * ncols + col];
    tile[step & 1][tid] = v;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc += c_w[k] * tile[step & 1][(tid + k) & (kBlock - 1)];
  }
  out[col] = acc;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int grid = 132 * 2, ncols = grid * kBlock, nsteps = 2048;
  std::vector<float> in(size_t(kRows) * ncols), w(kTaps);
  gpa::Lcg rng(17);
  for (auto& v : in) v = rng.uniform(0.f, 1.f);
  for (auto& v : w) v = rng.uniform(0.f, 1.f / kTaps);
  CUDA_CHECK(cudaMemcpyToSymbol(c_w, w.data(), kTaps * sizeof(float)));
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(ncols);
  auto launch = [&] { tiled_filter<<<grid, kBlock>>>(din, dout, ncols, nsteps); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, ncols);
  std::vector<double> want(ncols, 0.0);
  for (int r = 0; r < kRows; ++r)
    for (int col = 0; col < ncols; ++col) {
      const int base = col - col % kBlock, tid = col % kBlock;
      double s = 0.0;
      for (int k = 0; k < kTaps; ++k) s += w[k] * in[size_t(r) * ncols + base + (tid + k) % kBlock];
      want[col] += s * (nsteps / kRows);
    }
  gpa::check_close(got, [&](size_t i) { return want[i]; }, ncols, 1e-3, 1e-3, "filter sums");

  gpa::time_kernel("tiled_filter", opt, launch);
  return 0;
}
