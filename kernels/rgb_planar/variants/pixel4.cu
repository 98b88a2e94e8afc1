// Image-to-tensor preprocessing for a vision model: a batch of 8 interleaved RGB
// 8-bit images (HWC, 2048 x 2048, 96 MB) to a planar float tensor (NCHW, 384 MB),
// each value scaled to [0, 1] and normalized per channel, (v / 255 - mean[c]) /
// std[c] (torchvision's ToTensor + Normalize). Written the way a first port of
// "HWC to CHW" is: one thread per output element of the flat NCHW tensor, its
// (image, channel, pixel) found by integer division and modulo by the run-time
// extents, and the source byte read from the interleaved image.
// Performance problem: the lanes of a warp read bytes 3 apart (32 useful bytes
// spread over 96: 3-4 sectors per request) and each image's bytes are read three
// times, once per channel plane, a whole plane (12 MB of input, 16 MB of output)
// apart; every element pays two integer divisions by run-time values and two IEEE
// float divisions.
//
// Variant pixel4 (the fix): one thread per 4 consecutive pixels of one image
// (grid y = the image): no integer division; the 12 bytes of the 4 pixels come in
// as three 32-bit loads (lanes 12 bytes apart, the warp's three loads covering 384
// contiguous bytes once), and each plane gets one float4 store (512 contiguous
// bytes per warp). Each image's input is read once. Assumes channels == 3 and
// pixels % 4 == 0 (the harness's 3 and 2048 * 2048).
#include "../../common/harness.cuh"

__global__ void rgb_planar(float* out, const unsigned char* in, const float* mean, const float* stdv,
                           int images, int channels, int pixels) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;  // 4 pixels: 4q .. 4q + 3
  const int n = blockIdx.y;
  if (n >= images || 4 * q >= pixels) return;
  const unsigned* src = reinterpret_cast<const unsigned*>(in + (n * pixels + 4 * q) * channels);
  const unsigned w0 = src[0], w1 = src[1], w2 = src[2];  // r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3
  const unsigned r[4] = {w0 & 255, w0 >> 24, (w1 >> 16) & 255, (w2 >> 8) & 255};
  const unsigned g[4] = {(w0 >> 8) & 255, w1 & 255, w1 >> 24, (w2 >> 16) & 255};
  const unsigned b[4] = {(w0 >> 16) & 255, (w1 >> 8) & 255, w2 & 255, w2 >> 24};
  float* dst = out + n * channels * pixels + 4 * q;
  const float m0 = mean[0], m1 = mean[1], m2 = mean[2], s0 = stdv[0], s1 = stdv[1], s2 = stdv[2];
  *reinterpret_cast<float4*>(dst) = make_float4((r[0] / 255.0f - m0) / s0, (r[1] / 255.0f - m0) / s0,
                                                (r[2] / 255.0f - m0) / s0, (r[3] / 255.0f - m0) / s0);
  *reinterpret_cast<float4*>(dst + pixels) = make_float4((g[0] / 255.0f - m1) / s1, (g[1] / 255.0f - m1) / s1,
                                                         (g[2] / 255.0f - m1) / s1, (g[3] / 255.0f - m1) / s1);
  *reinterpret_cast<float4*>(dst + 2 * pixels) = make_float4((b[0] / 255.0f - m2) / s2, (b[1] / 255.0f - m2) / s2,
                                                             (b[2] / 255.0f - m2) / s2, (b[3] / 255.0f - m2) / s2);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int images = 8, channels = 3, pixels = 2048 * 2048;
  const size_t total = size_t(images) * channels * pixels;
  std::vector<unsigned char> in(total);
  gpa::Lcg rng(53);
  for (auto& v : in) v = (unsigned char)(rng.next() >> 8);
  const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, stdv = {0.229f, 0.224f, 0.225f};
  unsigned char* din = gpa::to_device(in);
  float* dmean = gpa::to_device(mean);
  float* dstd = gpa::to_device(stdv);
  float* dout = gpa::device_alloc<float>(total);
  const dim3 block(256), grid((pixels / 4 + block.x - 1) / block.x, images);
  auto launch = [&] { rgb_planar<<<grid, block>>>(dout, din, dmean, dstd, images, channels, pixels); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element: out[(n * C + c) * P + p] = (in[(n * P + p) * C + c] / 255 - mean[c]) / std[c],
  // in float as the kernel computes it (bit-exact without --use_fast_math; the tolerance admits
  // the approximate divisions of the fast_math variant, far below one step of v, ~0.017)
  std::vector<float> got = gpa::to_host(dout, total);
  auto ref = [&](size_t e) {
    const size_t p = e % pixels, c = (e / pixels) % channels, n = e / (size_t(channels) * pixels);
    const float v = float(in[(n * pixels + p) * channels + c]);
    return double((v / 255.0f - mean[c]) / stdv[c]);
  };
  gpa::check_close(got, ref, total, 1e-5, 1e-5, "out (every element)");

  gpa::time_kernel("rgb_planar", opt, launch);
  return 0;
}
