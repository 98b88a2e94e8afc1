// Bilateral filter on a 4096 x 4096 float grayscale image (row-major, 64 MB
// per array), written the way a first port of the CPU loop is: one thread per
// output pixel in 32 x 8 blocks, the radius r a run-time argument (r = 3, a
// 7 x 7 window), and per tap a clamped neighbour load, a spatial Gaussian
// weight and a range weight, each an expf of a quotient by 2 sigma^2 (IEEE
// float divisions), then the weighted value and the weight accumulated; one
// division at the end. The spatial weight depends only on (dx, dy) but is
// recomputed by every thread at every tap.
//
// Variant const_radius: the radius a template argument, launched as <3> (r is the
// harness's constant 3): the 7 x 7 taps unroll completely, dx * dx + dy * dy are
// constants, no loop control; the clamps, loads and weights per tap stay.
#include "../../common/harness.cuh"

template <int R>
__global__ void bilateral_gray(float* out, const float* in, int w, int h, float sigma_s, float sigma_r) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const float c = in[y * w + x];
  float sum = 0.f, norm = 0.f;
#pragma unroll
  for (int dy = -R; dy <= R; ++dy) {
#pragma unroll
    for (int dx = -R; dx <= R; ++dx) {
      const int yy = min(max(y + dy, 0), h - 1);
      const int xx = min(max(x + dx, 0), w - 1);
      const float v = in[yy * w + xx];
      const float ws = expf(-(dx * dx + dy * dy) / (2.f * sigma_s * sigma_s));
      const float wr = expf(-(v - c) * (v - c) / (2.f * sigma_r * sigma_r));
      const float wt = ws * wr;
      sum += wt * v;
      norm += wt;
    }
  }
  out[y * w + x] = sum / norm;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 4096, h = 4096, r = 3;
  const float sigma_s = 3.f, sigma_r = 0.1f;
  // piecewise-constant 32 x 32 regions with uniform noise: the range weight
  // keeps the edges between regions and averages the noise inside them
  std::vector<float> in(size_t(w) * h), level(size_t(w / 32) * (h / 32));
  gpa::Lcg rng(61);
  for (auto& v : level) v = rng.uniform(0.f, 1.f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      in[size_t(y) * w + x] = level[size_t(y / 32) * (w / 32) + x / 32] + rng.uniform(-0.05f, 0.05f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(size_t(w) * h);
  const dim3 block(32, 8), grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
  auto launch = [&] { bilateral_gray<r><<<grid, block>>>(dout, din, w, h, sigma_s, sigma_r); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 101st pixel against a double reference (same clamped window)
  std::vector<float> got = gpa::to_host(dout, size_t(w) * h);
  auto ref = [&](size_t e) {
    const int y = int(e / w), x = int(e % w);
    const double c = in[e];
    double s = 0.0, n = 0.0;
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx) {
        const int yy = std::min(std::max(y + dy, 0), h - 1), xx = std::min(std::max(x + dx, 0), w - 1);
        const double v = in[size_t(yy) * w + xx];
        const double wt = std::exp(-(dx * dx + dy * dy) / (2.0 * sigma_s * sigma_s)) *
                          std::exp(-(v - c) * (v - c) / (2.0 * double(sigma_r) * sigma_r));
        s += wt * v;
        n += wt;
      }
    return s / n;
  };
  gpa::check_close(got, ref, size_t(w) * h, 1e-4, 1e-5, "out (every 101st pixel)", 101);

  gpa::time_kernel("bilateral_gray", opt, launch);
  return 0;
}
