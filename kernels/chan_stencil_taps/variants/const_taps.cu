// Last layer of a small dense-prediction CNN head (a saliency / depth map): a direct 5 x 5
// convolution of a C = 32 channel NCHW feature map of one 1920 x 1080 frame down to one output
// plane, zero padding at the border ("same" size), plus a bias. The filter taps sit in
// __constant__ memory as in the textbook constant-memory convolution; the filter size K and the
// channel count C are run-time kernel arguments, as a first port that serves several heads writes
// them. One thread per output pixel in 32 x 8 blocks; per channel (run-time C, the outer loop) a
// K x K tap nest (run-time K) tests each tap position against the image edge, forms its address
// and multiplies the channel's pixel by the channel's tap weight.
// Performance problem (prior): the tap nest has run-time trip counts, so nvcc keeps it as loops
// (the inner one unrolled by 4 with a remainder): per tap the edge tests, the index arithmetic
// and the loop control are paid again for every channel although they do not depend on the
// channel; one FFMA per ~20 issued instructions.
//
// Variant const_taps: K is a template parameter (the launch instantiates the value the harness
// uses); the channel loop stays run-time. nvcc then unrolls the kx loop completely and keeps the
// ky loop (5 trips) as a loop.
#include "../../common/harness.cuh"

constexpr int kMaxTaps = 64 * 7 * 7;  // room for C <= 64 channels of up to 7 x 7 taps
__constant__ float c_w[kMaxTaps];

template <int K>
__global__ void chan_stencil_taps(float* out, const float* in, int C, int H, int W, float bias) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int r = K / 2;
  float acc = 0.f;
  for (int c = 0; c < C; ++c) {
    const float* plane = in + size_t(c) * H * W;
    for (int ky = 0; ky < K; ++ky) {
      const int iy = y + ky - r;
      for (int kx = 0; kx < K; ++kx) {
        const int ix = x + kx - r;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
          acc += plane[iy * W + ix] * c_w[(c * K + ky) * K + kx];
      }
    }
  }
  out[y * W + x] = acc + bias;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int C = 32, H = 1080, W = 1920, K = 5, r = K / 2;
  const size_t plane = size_t(H) * W;
  gpa::Lcg rng(1313);
  // feature values in [-0.5, 1.5): a per-channel offset in [0, 0.5) plus uniform noise in [-0.5, 1)
  std::vector<float> in(size_t(C) * plane), w(size_t(C) * K * K);
  for (int c = 0; c < C; ++c) {
    const float off = rng.uniform(0.f, 0.5f);
    for (size_t p = 0; p < plane; ++p) in[size_t(c) * plane + p] = off + rng.uniform(-0.5f, 1.f);
  }
  for (auto& v : w) v = rng.uniform(-0.1f, 0.1f);
  const float bias = 0.25f;
  CUDA_CHECK(cudaMemcpyToSymbol(c_w, w.data(), w.size() * sizeof(float)));
  float* din = gpa::to_device(in);
  // NaN everywhere (0xFF bytes): a pixel the kernel misses fails the check
  float* dout = gpa::device_alloc<float>(plane);
  CUDA_CHECK(cudaMemset(dout, 0xFF, plane * sizeof(float)));
  const dim3 block(32, 8), grid((W + 31) / 32, (H + 7) / 8);
  auto launch = [&] {
    switch (K) {
      case 3: chan_stencil_taps<3><<<grid, block>>>(dout, din, C, H, W, bias); break;
      case 5: chan_stencil_taps<5><<<grid, block>>>(dout, din, C, H, W, bias); break;
      case 7: chan_stencil_taps<7><<<grid, block>>>(dout, din, C, H, W, bias); break;
      default: gpa::fail("no instance for this filter size");
    }
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 13th pixel (13 and 1920 coprime: every column, the border ones included, is sampled),
  // in double, taps in the kernel's order
  std::vector<float> got = gpa::to_host(dout, plane);
  auto ref = [&](size_t p) {
    const int y = int(p / W), x = int(p % W);
    double acc = 0.0;
    for (int c = 0; c < C; ++c)
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx) {
          const int iy = y + ky - r, ix = x + kx - r;
          if (iy >= 0 && iy < H && ix >= 0 && ix < W)
            acc += double(in[size_t(c) * plane + size_t(iy) * W + ix]) * w[(c * K + ky) * K + kx];
        }
    return acc + bias;
  };
  gpa::check_close(got, ref, plane, 1e-4, 2e-4, "out", 13);

  gpa::time_kernel("chan_stencil_taps", opt, launch);
  return 0;
}
