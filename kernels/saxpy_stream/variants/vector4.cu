// SAXPY, y = a * x + y, over 2^26 floats with a grid-stride loop, launched with
// one full wave of blocks (8 blocks of 256 threads on each of the H100's 132
// SMs: every SM holds 64 warps). The kernel is memory-bound: each element is
// 8 bytes read and 4 written for one FFMA. Its only inefficiency is how few
// bytes each warp keeps in flight: one 4-byte load of x and one of y per
// iteration (16 KB per SM), a little short of what saturates HBM3.
#include "../../common/harness.cuh"

__global__ void saxpy(float* y, float* x, float a, int n) {
  // 16-byte accesses: four elements per load (cudaMalloc aligns x and y)
  float4* y4 = reinterpret_cast<float4*>(y);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += stride) {
    const float4 xv = x4[i];
    float4 yv = y4[i];
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z;
    yv.w = a * xv.w + yv.w;
    y4[i] = yv;
  }
  for (int i = n / 4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 26;
  const float a = 0.75f;
  std::vector<float> x(n), y(n);
  gpa::Lcg rng(61);
  for (auto& v : x) v = rng.uniform(-1, 1);
  for (auto& v : y) v = rng.uniform(-1, 1);
  float* dx = gpa::to_device(x);
  float* dy = gpa::to_device(y);
  const int block = 256, grid = 132 * 8;
  auto launch = [&] { saxpy<<<grid, block>>>(dy, dx, a, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dy, n);
  auto ref = [&](size_t i) { return double(a) * x[i] + y[i]; };
  gpa::check_close(got, ref, got.size(), 1e-6, 1e-6, "y after one saxpy (every 5th)", 5);

  gpa::time_kernel("saxpy", opt, launch);
  return 0;
}
