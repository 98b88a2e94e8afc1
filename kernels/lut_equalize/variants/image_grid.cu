// Histogram equalization of a batch of 8-bit grayscale frames, applied as a
// lookup table and written as normalized float input for a network: in is B =
// 40 frames of 1920 x 1080 bytes (83 MB), lut holds one 256-entry float table per
// frame (its equalization curve, built on the host from the frame's CDF), and
// out[i] = lut[img * 256 + in[i]] * scale + offset (83 M floats, 332 MB), scale
// and offset mapping the equalized levels 0..255 to [-1, 1]. One thread per
// pixel, the frame index from a division by the run-time frame size, as a first
// port of the CPU loop writes it.
// Performance problem (prior): each thread has one 1-byte load in flight, so an
// SM holds at most 2048 bytes of input in flight (one 32-byte sector per warp)
// while its share of the DRAM stream needs several times that; the LUT gather
// is a data-dependent L1 hit and the store is a coalesced 128 bytes per warp.
//
// Variant image_grid: a 2D grid, blockIdx.y the frame and blockIdx.x * blockDim.x
// + threadIdx.x the pixel within it, so the frame index needs no division by the
// run-time frame size (the ~23 SASS instructions of the signed division go); the
// same 324000 blocks in the same order, the same loads and stores.
#include "../../common/harness.cuh"

__global__ void lut_equalize(float* out, const unsigned char* in, const float* lut, int pixels,
                             int n, float scale, float offset) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;  // pixel within frame blockIdx.y
  if (p >= pixels) return;
  const int img = blockIdx.y;
  const int i = img * pixels + p;
  out[i] = lut[img * 256 + in[i]] * scale + offset;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int frames = 40, width = 1920, height = 1080;
  const int pixels = width * height, n = frames * pixels;
  gpa::Lcg rng(127);
  // each frame: a low-contrast scene (a base level, a horizontal vignette and a
  // vertical ramp of a few tens of levels) plus triangular noise, so that its
  // histogram is a narrow, skewed hump that equalization spreads over 0..255;
  // neighbouring pixels are close in value, as in a photograph
  std::vector<unsigned char> in(static_cast<size_t>(n));
  std::vector<int> col(width), row(height);
  for (int f = 0; f < frames; ++f) {
    const int base = 30 + int(rng.next() % 80);
    const float amp = rng.uniform(15.f, 60.f);
    const int sigma = 6 + int(rng.next() % 27);
    for (int x = 0; x < width; ++x) {
      const float u = (x - 0.5f * width) / (0.5f * width);
      col[x] = int(amp * (1.f - u * u));
    }
    for (int y = 0; y < height; ++y) row[y] = int(0.5f * amp * y / height);
    unsigned char* px = in.data() + size_t(f) * pixels;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const unsigned r = rng.next();
        const int noise = ((int(r & 63) + int((r >> 6) & 63) - 63) * sigma) >> 5;
        const int v = base + row[y] + col[x] + noise;
        px[size_t(y) * width + x] = (unsigned char)(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
    }
  }
  // per frame: histogram, CDF, lut[v] = round((cdf[v] - cdf_min) * 255 / (N - cdf_min))
  std::vector<float> lut(size_t(frames) * 256);
  for (int f = 0; f < frames; ++f) {
    long long hist[256] = {0};
    const unsigned char* px = in.data() + size_t(f) * pixels;
    for (int p = 0; p < pixels; ++p) ++hist[px[p]];
    long long cdf = 0, cdf_min = 0;
    for (int v = 0; v < 256 && cdf_min == 0; ++v) cdf_min = hist[v];
    for (int v = 0; v < 256; ++v) {
      cdf += hist[v];
      const double l = std::round(double(cdf - cdf_min) * 255.0 / double(pixels - cdf_min));
      lut[size_t(f) * 256 + v] = float(std::max(0.0, l));
    }
  }
  const float scale = 2.f / 255.f, offset = -1.f;
  unsigned char* din = gpa::to_device(in);
  float* dlut = gpa::to_device(lut);
  float* dout = gpa::device_alloc<float>(size_t(n));  // zeros: no output is 0, a missed pixel fails
  const int block = 256;
  const dim3 grid((pixels + block - 1) / block, n / pixels);
  auto launch = [&] { lut_equalize<<<grid, block>>>(dout, din, dlut, pixels, n, scale, offset); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every pixel against a double reference (same float table, same scale and offset)
  std::vector<float> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t e) {
    return double(lut[(e / pixels) * 256 + in[e]]) * double(scale) + double(offset);
  };
  gpa::check_close(got, ref, size_t(n), 1e-6, 1e-6, "out");

  gpa::time_kernel("lut_equalize", opt, launch);
  return 0;
}
