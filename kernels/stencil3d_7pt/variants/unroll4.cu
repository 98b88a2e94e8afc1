// 3D 7-point stencil (one Jacobi step of the heat equation) on an
// nx x ny x nz float grid: 2D thread blocks of 32x8 cover the xy-plane and
// every thread marches along z, computing one column of outputs.
// Performance problem: too little work in flight. Marching along z leaves
// (nx/32)*(ny/8) = 256 blocks -- 16 warps per SM on 132 SMs -- and each z
// step's loads cannot start before the previous step's store: `in` and `out`
// are plain pointers, so the store may change what the next step reads. Each
// warp waits one memory latency per step with a handful of loads in flight.
#include "../../common/harness.cuh"

__global__ void stencil7(const float* in, float* out, int nx, int ny, int nz, float c0, float c1) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
  const size_t plane = size_t(nx) * ny;
  size_t i = plane + size_t(y) * nx + x;
#pragma unroll 4
  for (int z = 1; z < nz - 1; ++z, i += plane) {
    out[i] = c0 * in[i] + c1 * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane]);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int nx = 256, ny = 256, nz = 512;
  const size_t cells = size_t(nx) * ny * nz;
  const float c0 = 0.4f, c1 = 0.1f;
  std::vector<float> u(cells);
  gpa::Lcg rng(29);
  for (auto& v : u) v = rng.uniform(0.f, 1.f);
  float* din = gpa::to_device(u);
  float* dout = gpa::device_alloc<float>(cells);
  const dim3 block(32, 8), grid(nx / 32, ny / 8);
  auto launch = [&] { stencil7<<<grid, block>>>(din, dout, nx, ny, nz, c0, c1); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, cells);
  const size_t plane = size_t(nx) * ny;
  auto ref = [&](size_t i) {
    const size_t x = i % nx, y = (i / nx) % ny, z = i / plane;
    if (x == 0 || y == 0 || z == 0 || x == size_t(nx) - 1 || y == size_t(ny) - 1 || z == size_t(nz) - 1) return 0.0;
    return double(c0) * u[i] + double(c1) * (double(u[i - 1]) + u[i + 1] + u[i - nx] + u[i + nx] + u[i - plane] + u[i + plane]);
  };
  gpa::check_close(got, ref, cells, 1e-5, 1e-6, "grid after one step (every 3rd)", 3);

  gpa::time_kernel("stencil7", opt, launch);
  return 0;
}
