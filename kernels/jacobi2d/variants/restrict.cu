// One 5-point Jacobi sweep on an n x n float grid in global memory: every
// interior point becomes the mean of its four neighbours, boundary points are
// copied. One thread per point, 32x8 blocks.
// Performance problem: the thread index is mapped column-major -- threadIdx.x
// walks the rows of a row-major grid -- so the 32 lanes of a warp touch 32
// different rows: each of the four loads and the store takes 32 sectors for
// 128 useful bytes. DRAM traffic stays near ideal (the block's other warps hit
// the same sectors in L1), but L1 serves 8x the sectors per request.
#include "../../common/harness.cuh"

__global__ void jacobi_step(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= n || col >= n) return;
  const size_t i = size_t(row) * n + col;
  if (row == 0 || col == 0 || row == n - 1 || col == n - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.25f * (in[i - n] + in[i + n] + in[i - 1] + in[i + 1]);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 8192;
  const size_t cells = size_t(n) * n;
  std::vector<float> u(cells);
  gpa::Lcg rng(71);
  for (auto& v : u) v = rng.uniform(0.f, 1.f);
  float* din = gpa::to_device(u);
  float* dout = gpa::device_alloc<float>(cells);
  const dim3 block(32, 8), grid(n / 32, n / 8);
  auto launch = [&] { jacobi_step<<<grid, block>>>(din, dout, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, cells);
  auto ref = [&](size_t i) {
    const size_t row = i / n, col = i % n;
    if (row == 0 || col == 0 || row == size_t(n) - 1 || col == size_t(n) - 1) return double(u[i]);
    return 0.25 * (double(u[i - n]) + u[i + n] + u[i - 1] + u[i + 1]);
  };
  gpa::check_close(got, ref, cells, 1e-5, 1e-6, "grid after one sweep (every 5th)", 5);

  gpa::time_kernel("jacobi_step", opt, launch);
  return 0;
}
