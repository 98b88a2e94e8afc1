// Per-image binary threshold of a batch of 8-bit grayscale images, as in a
// document-scanning or inspection pipeline: in holds imgs = 64 frames of
// 1920 x 1080 pixels back to back (133 MB), thr[img] is each frame's threshold
// (chosen beforehand, e.g. by Otsu's method; here on the host), and
// out[i] = in[i] > thr[img] ? 255 : 0 (133 MB). One thread per pixel, the image
// from a signed division i / pixels by the run-time int pixels = w * h, as a
// first port of the CPU loop writes it.
// Performance problem (prior): each thread has one 1-byte load in flight (32
// bytes per warp), so an SM holds at most 2 KB of input in flight while its
// share of the DRAM stream needs many times that, and every pixel pays the
// index math and the signed division.
//
// Variant uint2_8px: each thread maps 8 consecutive pixels of one image (pixels is a
// multiple of 16), read as one uint2 (LDG.E.64: 8 bytes per lane, 256 contiguous bytes per warp)
// and written as one uint2 (STG.E.64), with one division and one threshold load per
// 8 pixels; the compare still per pixel; 1/8 of the threads.
#include "../../common/harness.cuh"

union V8 {  // 8 pixels as one 8-byte vector
  uint2 v;
  unsigned char b[8];
};

__global__ void threshold_u8(unsigned char* out, const unsigned char* in, const unsigned char* thr,
                             int pixels, int n) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // pixels 8j .. 8j + 7 (one image)
  const int i = 8 * j;
  if (i >= n) return;
  const int img = i / pixels;
  const unsigned char t = thr[img];
  V8 a, o;
  a.v = reinterpret_cast<const uint2*>(in)[j];
#pragma unroll
  for (int k = 0; k < 8; ++k) o.b[k] = a.b[k] > t ? 255 : 0;
  reinterpret_cast<uint2*>(out)[j] = o.v;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int imgs = 64, w = 1920, h = 1080, pixels = w * h, n = imgs * pixels;
  gpa::Lcg rng(227);
  // each frame a lit page: a horizontal illumination gradient, dark text strokes
  // (every 37th column band of rows) and noise; thresholds near each frame's mid-level
  std::vector<unsigned char> in(static_cast<size_t>(n)), thr(static_cast<size_t>(imgs));
  for (int m = 0; m < imgs; ++m) {
    const float light = rng.uniform(140.f, 230.f), ink = rng.uniform(10.f, 70.f);
    thr[m] = (unsigned char)(0.5f * (light + ink));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const bool stroke = (x % 37 < 3) && ((y / 24) % 2 == 0);
        float v = (stroke ? ink : light * (0.8f + 0.2f * x / w)) + rng.uniform(-40.f, 40.f);
        v = std::min(std::max(v, 0.f), 255.f);
        in[size_t(m) * pixels + size_t(y) * w + x] = (unsigned char)v;
      }
  }
  unsigned char* din = gpa::to_device(in);
  unsigned char* dthr = gpa::to_device(thr);
  // 0x80 everywhere: every output is 0 or 255, a missed pixel fails the check
  unsigned char* dout = gpa::device_alloc<unsigned char>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0x80, size_t(n)));
  if (pixels % 8) gpa::fail("pixels must be a multiple of 8 for 8-byte vectors");
  const int block = 256, grid = (n / 8 + block - 1) / block;
  auto launch = [&] { threshold_u8<<<grid, block>>>(dout, din, dthr, pixels, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every pixel exactly
  std::vector<unsigned char> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t e) { return in[e] > thr[e / pixels] ? 255.0 : 0.0; };
  gpa::check_close(got, ref, size_t(n), 0.0, 0.0, "out");

  gpa::time_kernel("threshold_u8", opt, launch);
  return 0;
}
