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
// Variant fast_math: the original source compiled with --use_fast_math (case.toml
// flags): v / 255.0f and / stdv[c] become approximate divisions without the FCHK
// slow path; the integer divisions and the accesses are unchanged.
#include "../../common/harness.cuh"

__global__ void rgb_planar(float* out, const unsigned char* in, const float* mean, const float* stdv,
                           int images, int channels, int pixels) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= images * channels * pixels) return;
  const int p = idx % pixels;
  const int c = (idx / pixels) % channels;
  const int n = idx / (channels * pixels);
  const unsigned char v = in[(n * pixels + p) * channels + c];
  out[idx] = (v / 255.0f - mean[c]) / stdv[c];
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
  const int block = 256, grid = int((total + block - 1) / block);
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
