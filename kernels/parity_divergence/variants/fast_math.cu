// Two kinds of work chosen by the parity of the element index. Consecutive
// threads take consecutive elements, so every warp holds both parities and
// runs both branches one after the other (divergent warps: half the lanes idle
// in each branch).
#include "../../common/harness.cuh"

constexpr int kIters = 2048;

__global__ void relax(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = t;
  if (i >= n) return;
  float x = in[i];
  if (i % 2 == 0) {
    for (int k = 0; k < kIters; ++k) x = fmaf(x, 0.999f, 0.001f);
  } else {
    for (int k = 0; k < kIters; ++k) x = fmaf(x, -0.5f, 1.0f);
  }
  out[i] = x;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 22;
  std::vector<float> in(n);
  gpa::Lcg rng(43);
  for (auto& v : in) v = rng.uniform(-4.f, 4.f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { relax<<<grid, block>>>(din, dout, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    float x = in[i];
    for (int k = 0; k < kIters; ++k) x = (i % 2 == 0) ? std::fmaf(x, 0.999f, 0.001f) : std::fmaf(x, -0.5f, 1.0f);
    return double(x);
  };
  gpa::check_close(got, ref, got.size(), 1e-6, 1e-6, "relaxed values (every 101st)", 101);

  gpa::time_kernel("relax", opt, launch);
  return 0;
}
