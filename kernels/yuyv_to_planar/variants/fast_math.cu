// Packed YUYV 4:2:2 video frames (V4L2_PIX_FMT_YUYV, a webcam's or a capture card's
// native format: per pair of pixels the bytes Y0 U Y1 V) to planar normalized float
// YUV 4:4:4, as the first step of a vision model's preprocessing (colour conversion
// and resizing follow): in holds frames = 8 frames of 2560 x 1440 pixels, each row
// pitch = 2 * width bytes (59 MB); out is the planar tensor [frame][plane][y][x]
// (planes Y, U, V; 354 MB) with out = byte / 255 in [0, 1], the chroma of a pixel
// pair repeated for both its pixels.
// One thread per OUTPUT element of the flat planar tensor, its (frame, plane, row,
// column) from signed division and modulo of the flat index by the run-time width
// and height (and by 3), as a first port of the CPU loop writes it.
// Performance problem (prior): per element two run-time signed divisions, a division
// by 3 and an IEEE float division by 255; the lanes of a warp read single bytes 2 (Y)
// or 4 (U, V; two lanes per byte) bytes apart, so each input sector is read once for
// each of the three planes, far apart in time (the L2 serves it 3 times).
//
// Variant fast_math: the same source built with --use_fast_math: the IEEE division by 255
// (FCHK, a slow-path call) becomes one FMUL by 1/255.
#include "../../common/harness.cuh"

__global__ void yuyv_to_planar(float* out, const unsigned char* in, int width, int height,
                               int pitch, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int x = i % width;  // column
  const int t = i / width;
  const int y = t % height;  // row
  const int u = t / height;  // frame * 3 + plane
  const int c = u % 3;       // plane: 0 Y, 1 U, 2 V
  const int f = u / 3;       // frame
  const unsigned char* row = in + (size_t)(f * height + y) * pitch;
  // Y0 U Y1 V: pixel x's luma at 2x, its pair's U at 4(x/2) + 1 and V at 4(x/2) + 3
  const int off = c == 0 ? 2 * x : 4 * (x / 2) + 2 * c - 1;
  out[i] = row[off] / 255.0f;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int frames = 8, width = 2560, height = 1440, pitch = 2 * width;
  const int n = frames * 3 * width * height;
  gpa::Lcg rng(4222);
  // each frame a smooth scene (a luma ramp and slowly varying chroma) plus sensor
  // noise, in the video range; every byte value may occur
  std::vector<unsigned char> in(size_t(frames) * height * pitch);
  for (int f = 0; f < frames; ++f)
    for (int y = 0; y < height; ++y)
      for (int p = 0; p < width / 2; ++p) {
        unsigned char* q = &in[(size_t(f) * height + y) * pitch + 4 * size_t(p)];
        const unsigned r = rng.next();
        const int base = 16 + (219 * (p + y + 37 * f)) / (width / 2 + height + 37 * frames);
        q[0] = (unsigned char)std::min(255, base + int(r & 31u));              // Y0
        q[1] = (unsigned char)(128 + int((r >> 5) & 63u) - 32 + (y >> 6) - 11);  // U
        q[2] = (unsigned char)std::min(255, base + int((r >> 11) & 31u));      // Y1
        q[3] = (unsigned char)(128 + int((r >> 16) & 63u) - 32 - (p >> 6) + 10);  // V
      }
  unsigned char* din = gpa::to_device(in);
  // 0xFF bytes everywhere: a NaN in every output, a missed element fails the check
  float* dout = gpa::device_alloc<float>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(float)));
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { yuyv_to_planar<<<grid, block>>>(dout, din, width, height, pitch, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 7th element (7 is prime to 3 and to every vector width, so every plane and
  // every lane position of a vector store is checked); a float division on the CPU,
  // 2 ulp of tolerance for a fast-math build
  std::vector<float> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t e) {
    const size_t x = e % width, t = e / width, y = t % height, u = t / height, c = u % 3, f = u / 3;
    const size_t off = c == 0 ? 2 * x : 4 * (x / 2) + 2 * c - 1;
    return double(in[(f * height + y) * pitch + off] / 255.0f);
  };
  gpa::check_close(got, ref, size_t(n), 3e-7, 0.0, "out", 7);

  gpa::time_kernel("yuyv_to_planar", opt, launch);
  return 0;
}
