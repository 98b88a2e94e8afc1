// Column pass of a separable Gaussian convolution (radius 8) on a 4096x2048
// float image. One thread per column walks down the whole column: consecutive
// threads read consecutive floats (coalesced), but the grid is only 4096
// threads, 32 blocks of 128 for 132 SMs, and each warp's 2048 outputs are a
// serial chain: every row's new input row is a miss the warp waits for before
// the next row starts. Too little parallelism: most SMs idle, the busy ones
// mostly waiting on memory latency.
//
// Variant small_blocks: 32-thread blocks (128 blocks instead of 32): the same
// 128 warps spread over 128 SMs.
#include "../../common/harness.cuh"

constexpr int kR = 8;
__constant__ float c_w[2 * kR + 1];

__global__ void conv_cols(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = 0; y < h; ++y) {
    float s = 0.f;
#pragma unroll
    for (int k = -kR; k <= kR; ++k) s += c_w[k + kR] * in[min(max(y + k, 0), h - 1) * w + x];
    out[y * w + x] = s;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 4096, h = 2048;
  const size_t n = size_t(w) * h;
  std::vector<float> img(n), wt(2 * kR + 1);
  gpa::Lcg rng(83);
  for (auto& v : img) v = rng.uniform(0.f, 1.f);
  double sum = 0;
  for (int k = -kR; k <= kR; ++k) sum += wt[k + kR] = std::exp(-k * k / 32.f);  // sigma 4
  for (auto& v : wt) v = float(v / sum);
  CUDA_CHECK(cudaMemcpyToSymbol(c_w, wt.data(), wt.size() * sizeof(float)));
  float* din = gpa::to_device(img);
  float* dout = gpa::device_alloc<float>(n);
  const int block = 32, grid = (w + block - 1) / block;
  auto launch = [&] { conv_cols<<<grid, block>>>(dout, din, w, h); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    const int y = int(i / w), x = int(i % w);
    double s = 0;
    for (int k = -kR; k <= kR; ++k) s += double(wt[k + kR]) * img[size_t(std::min(std::max(y + k, 0), h - 1)) * w + x];
    return s;
  };
  gpa::check_close(got, ref, n, 1e-5, 1e-6, "column pass (every 5th)", 5);

  gpa::time_kernel("conv_cols", opt, launch);
  return 0;
}
