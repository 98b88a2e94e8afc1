// Bilinear resize of a batch of 8-bit RGBA video frames, 4K (3840 x 2160) to
// 1440p (2560 x 1440), half-pixel centres as in OpenCV's INTER_LINEAR and
// PyTorch's interpolate(mode="bilinear", align_corners=False): source coordinate
// (x + 0.5) * scale - 0.5, clamped at 0, taps x0 and min(x0 + 1, w - 1).
// Written the way a first port is: one thread per output pixel in 32 x 8 blocks
// (grid z = frame), the four channels of the interleaved pixel handled one byte
// at a time. Performance problem: every channel of every tap is its own
// LDG.U8 (16 load requests per warp per pixel, each for 1 of the 4 bytes its
// lanes' pixels share) and every channel its own STG.U8 (4 store requests per
// warp, 1 byte per lane); a warp's 32 pixels of one tap are 192 bytes of a row.
//
// Variant fast_math: the original source, built with --use_fast_math
// (case.toml flags): no division, square root or transcendental to replace;
// flush-to-zero only.
#include "../../common/harness.cuh"

__device__ __forceinline__ float blend(float p00, float p01, float p10, float p11, float lx, float ly) {
  return (1.0f - ly) * ((1.0f - lx) * p00 + lx * p01) + ly * ((1.0f - lx) * p10 + lx * p11);
}

__global__ void bilinear_resize(unsigned char* dst, const unsigned char* src, int in_w, int in_h, int out_w,
                                int out_h, float scale_x, float scale_y) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= out_w || y >= out_h) return;
  const float sx = fmaxf((x + 0.5f) * scale_x - 0.5f, 0.0f);
  const float sy = fmaxf((y + 0.5f) * scale_y - 0.5f, 0.0f);
  const int x0 = int(sx), y0 = int(sy);
  const int x1 = min(x0 + 1, in_w - 1), y1 = min(y0 + 1, in_h - 1);
  const float lx = sx - x0, ly = sy - y0;
  const unsigned char* frame = src + size_t(blockIdx.z) * in_h * in_w * 4;
  const unsigned char* row0 = frame + size_t(y0) * in_w * 4;
  const unsigned char* row1 = frame + size_t(y1) * in_w * 4;
  unsigned char* out = dst + ((size_t(blockIdx.z) * out_h + y) * out_w + x) * 4;
  for (int c = 0; c < 4; ++c) {
    const float v = blend(row0[x0 * 4 + c], row0[x1 * 4 + c], row1[x0 * 4 + c], row1[x1 * 4 + c], lx, ly);
    out[c] = (unsigned char)(v + 0.5f);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int frames = 8, in_w = 3840, in_h = 2160, out_w = 2560, out_h = 1440;
  const float scale_x = float(in_w) / out_w, scale_y = float(in_h) / out_h;
  // frames: smooth gradients plus noise (the resize reads every byte whatever the content)
  gpa::Lcg rng(83);
  std::vector<unsigned char> img(size_t(frames) * in_h * in_w * 4);
  for (size_t p = 0; p < img.size() / 4; ++p) {
    const unsigned r = rng.next();
    const size_t xx = p % in_w, yy = (p / in_w) % in_h;
    img[p * 4 + 0] = (unsigned char)((xx / 15 + (r & 31)) & 255);
    img[p * 4 + 1] = (unsigned char)((yy / 9 + ((r >> 5) & 31)) & 255);
    img[p * 4 + 2] = (unsigned char)(((xx + yy) / 24 + ((r >> 10) & 63)) & 255);
    img[p * 4 + 3] = (unsigned char)(255 - ((r >> 16) & 15));
  }

  unsigned char* dsrc = gpa::to_device(img);
  const size_t out_n = size_t(frames) * out_h * out_w * 4;
  unsigned char* ddst = gpa::device_alloc<unsigned char>(out_n);
  const dim3 block(32, 8);
  const dim3 grid((out_w + block.x - 1) / block.x, (out_h + block.y - 1) / block.y, frames);
  auto launch = [&] {
    bilinear_resize<<<grid, block>>>(ddst, dsrc, in_w, in_h, out_w, out_h, scale_x, scale_y);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every output byte, within one level: the GPU contracts the blend into FMAs, so a
  // value within a few ulps of a .5 boundary may round to the neighbouring level
  std::vector<unsigned char> got = gpa::to_host(ddst, out_n), want(out_n);
  for (size_t f = 0; f < size_t(frames); ++f)
    for (int y = 0; y < out_h; ++y) {
      const float sy = std::max((y + 0.5f) * scale_y - 0.5f, 0.0f);
      const int y0 = int(sy), y1 = std::min(y0 + 1, in_h - 1);
      const double ly = sy - y0;
      const unsigned char* r0 = img.data() + (f * in_h + y0) * in_w * 4;
      const unsigned char* r1 = img.data() + (f * in_h + y1) * in_w * 4;
      for (int x = 0; x < out_w; ++x) {
        const float sx = std::max((x + 0.5f) * scale_x - 0.5f, 0.0f);
        const int x0 = int(sx), x1 = std::min(x0 + 1, in_w - 1);
        const double lx = sx - x0;
        for (int c = 0; c < 4; ++c) {
          const double v = (1 - ly) * ((1 - lx) * r0[x0 * 4 + c] + lx * r0[x1 * 4 + c]) +
                           ly * ((1 - lx) * r1[x0 * 4 + c] + lx * r1[x1 * 4 + c]);
          want[((f * out_h + y) * out_w + x) * 4 + c] = (unsigned char)std::floor(v + 0.5);
        }
      }
    }
  gpa::check_close(got, [&](size_t e) { return double(want[e]); }, out_n, 0.0, 1.0, "dst (every byte)");

  gpa::time_kernel("bilinear_resize", opt, launch);
  return 0;
}
