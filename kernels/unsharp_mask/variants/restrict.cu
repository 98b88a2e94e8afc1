// Unsharp masking (local contrast enhancement) of a 4096 x 4096 float grayscale
// image in [0, 1] (row-major, 64 MB per array), written the way a first port of
// the CPU loop is: one thread per output pixel in 32 x 8 blocks, the radius r a
// run-time argument (r = 3, a 7 x 7 window), the Gaussian window weights read
// from a (2r + 1)^2 table in global memory, per tap a clamped neighbour load and
// a weighted sum, the weights summed alongside; the blurred mean is the sum
// divided by the weight sum, and out = in + amount * (in - mean), clamped to
// [0, 1].
//
// Variant restrict: __restrict__ on out, const __restrict__ on in and wts.
#include "../../common/harness.cuh"

__global__ void unsharp_mask(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ wts, int w, int h, int r, float amount) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int k = 2 * r + 1;
  float sum = 0.f, wsum = 0.f;
  for (int dy = -r; dy <= r; ++dy) {
    const int yy = min(max(y + dy, 0), h - 1);
    for (int dx = -r; dx <= r; ++dx) {
      const int xx = min(max(x + dx, 0), w - 1);
      const float wt = wts[(dy + r) * k + dx + r];
      sum += wt * in[yy * w + xx];
      wsum += wt;
    }
  }
  const float mean = sum / wsum;
  const float c = in[y * w + x];
  out[y * w + x] = fminf(fmaxf(c + amount * (c - mean), 0.f), 1.f);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 4096, h = 4096, r = 3;
  const float sigma = 1.5f, amount = 1.5f;
  // a smooth shading (two slow sinusoids) with 64 x 64 blocks of contrast steps
  // and uniform noise: the mask boosts the steps and the noise alike
  std::vector<float> in(size_t(w) * h), level(size_t(w / 64) * (h / 64));
  gpa::Lcg rng(73);
  for (auto& v : level) v = rng.uniform(-0.15f, 0.15f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      in[size_t(y) * w + x] = 0.5f + 0.2f * std::sin(x * 0.003f) * std::cos(y * 0.002f) +
                              level[size_t(y / 64) * (w / 64) + x / 64] + rng.uniform(-0.04f, 0.04f);
  // unnormalized Gaussian window weights, row dy + r, column dx + r
  std::vector<float> wts(size_t(2 * r + 1) * (2 * r + 1));
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx)
      wts[size_t(dy + r) * (2 * r + 1) + dx + r] = std::exp(-(dx * dx + dy * dy) / (2.f * sigma * sigma));
  float* din = gpa::to_device(in);
  float* dwts = gpa::to_device(wts);
  float* dout = gpa::device_alloc<float>(size_t(w) * h);
  const dim3 block(32, 8), grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
  auto launch = [&] { unsharp_mask<<<grid, block>>>(dout, din, dwts, w, h, r, amount); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 101st pixel against a double reference (same clamped window and weights)
  std::vector<float> got = gpa::to_host(dout, size_t(w) * h);
  auto ref = [&](size_t e) {
    const int y = int(e / w), x = int(e % w);
    double s = 0.0, n = 0.0;
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx) {
        const int yy = std::min(std::max(y + dy, 0), h - 1), xx = std::min(std::max(x + dx, 0), w - 1);
        const double wt = wts[size_t(dy + r) * (2 * r + 1) + dx + r];
        s += wt * in[size_t(yy) * w + xx];
        n += wt;
      }
    const double c = in[e];
    return std::min(std::max(c + double(amount) * (c - s / n), 0.0), 1.0);
  };
  gpa::check_close(got, ref, size_t(w) * h, 1e-4, 1e-5, "out (every 101st pixel)", 101);

  gpa::time_kernel("unsharp_mask", opt, launch);
  return 0;
}
