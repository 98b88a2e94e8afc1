// 2D 5x5 filter (a smoothing kernel) on a 4096x4096 float image, clamped at
// the borders. The radius is a run-time argument, so both tap loops have a
// run-time trip count: nvcc cannot unroll them fully, and every tap pays the
// loop control, the clamped index arithmetic and a coefficient load from global
// memory at a run-time offset; the loads of one pixel issue a few at a time.
//
// Variant unroll4: #pragma unroll 4 on the inner tap loop (run-time trip count).
#include "../../common/harness.cuh"

__global__ void filter2d(float* out, const float* in, const float* coef, int w, int h, int r) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.f;
  for (int dy = -r; dy <= r; ++dy)
#pragma unroll 4
    for (int dx = -r; dx <= r; ++dx)
      s += coef[(dy + r) * (2 * r + 1) + dx + r] * in[min(max(y + dy, 0), h - 1) * w + min(max(x + dx, 0), w - 1)];
  out[y * w + x] = s;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 4096, h = 4096, r = 2, d = 2 * r + 1;
  const size_t n = size_t(w) * h;
  std::vector<float> img(n), coef(d * d);
  gpa::Lcg rng(61);
  for (auto& v : img) v = rng.uniform(0.f, 1.f);
  for (auto& v : coef) v = rng.uniform(0.f, 0.08f);
  float* din = gpa::to_device(img);
  float* dcoef = gpa::to_device(coef);
  float* dout = gpa::device_alloc<float>(n);
  const dim3 block(32, 8), grid((w + 31) / 32, (h + 7) / 8);
  auto launch = [&] { filter2d<<<grid, block>>>(dout, din, dcoef, w, h, r); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  auto ref = [&](size_t i) {
    const int y = int(i / w), x = int(i % w);
    double s = 0;
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx)
        s += double(coef[(dy + r) * d + dx + r]) *
             img[size_t(std::min(std::max(y + dy, 0), h - 1)) * w + std::min(std::max(x + dx, 0), w - 1)];
    return s;
  };
  gpa::check_close(got, ref, n, 1e-5, 1e-6, "filtered image (every 7th)", 7);

  gpa::time_kernel("filter2d", opt, launch);
  return 0;
}
