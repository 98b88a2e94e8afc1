// One explicit step of the 2D heat equation on an 8192 x 8192 float grid
// (row-major, 256 MB per array): out = u + r * (north + south + west + east
// - 4u) with r = 0.25 (the largest stable step for the 5-point stencil),
// one thread per interior point in 32 x 8 blocks, reading `in` and writing
// `out`, no shared memory: the way a first port of the CPU loop is written.
// The coefficient is written as the double literal 0.25, so the sum is
// converted to double, multiplied and added in FP64 and converted back.
// Each thread issues five loads (its point and its four neighbours); the
// neighbours are the points of the warps around it, so most of them come
// from L1 or L2, and the bytes reaching DRAM are close to one read of `in`
// and one write of `out`.
//
// Variant restrict: __restrict__ on out, const __restrict__ on in (line 14).
#include "../../common/harness.cuh"

__global__ void heat2d_naive(float* __restrict__ out, const float* __restrict__ in, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
  const int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
  if (x < nx - 1 && y < ny - 1) {
    const int i = y * nx + x;
    const float u = in[i];
    const float lap = in[i - nx] + in[i + nx] + in[i - 1] + in[i + 1] - 4.f * u;
    out[i] = u + 0.25 * lap;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int nx = 8192, ny = 8192;
  std::vector<float> in(size_t(nx) * ny);
  gpa::Lcg rng(53);
  for (auto& v : in) v = rng.uniform(0.f, 1.f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(size_t(nx) * ny);
  const dim3 block(32, 8), grid((nx - 2 + block.x - 1) / block.x, (ny - 2 + block.y - 1) / block.y);
  auto launch = [&] { heat2d_naive<<<grid, block>>>(dout, din, nx, ny); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 1009th point against a double reference; the boundary of out is
  // never written and stays 0 (device_alloc clears it)
  std::vector<float> got = gpa::to_host(dout, size_t(nx) * ny);
  auto ref = [&](size_t e) {
    const size_t y = e / nx, x = e % nx;
    if (x == 0 || y == 0 || x == size_t(nx) - 1 || y == size_t(ny) - 1) return 0.0;
    const double u = in[e];
    return u + 0.25 * (double(in[e - nx]) + in[e + nx] + in[e - 1] + in[e + 1] - 4.0 * u);
  };
  gpa::check_close(got, ref, size_t(nx) * ny, 1e-5, 1e-6, "out (every 1009th point)", 1009);

  gpa::time_kernel("heat2d_naive", opt, launch);
  return 0;
}
