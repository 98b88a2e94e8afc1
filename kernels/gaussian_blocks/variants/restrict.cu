// 7x7 Gaussian blur on an 8-bit image (seed 002). The kernel is launched with
// 8x8 blocks: a warp covers 8 columns of 4 rows, so each load of a warp touches
// 4 rows (4+ sectors for 32 bytes of pixels): the accesses are uncoalesced.
#include "../../common/harness.cuh"

typedef unsigned char uchar;

__constant__ float c_gauss[7][7];

__global__ void gaussian_filter_7x7(int w, int h, const uchar* __restrict__ src, uchar* __restrict__ dst) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float sum = 0.f;
  for (int j = -3; j <= 3; ++j) {
    const int yy = min(max(y + j, 0), h - 1);
    for (int i = -3; i <= 3; ++i) {
      const int xx = min(max(x + i, 0), w - 1);
      sum += c_gauss[j + 3][i + 3] * src[yy * w + xx];
    }
  }
  dst[y * w + x] = (uchar)min(255.f, sum + 0.5f);
}

static const dim3 kBlock(8, 8);

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 8192, h = 4096;
  float g[7][7], total = 0.f;
  for (int j = 0; j < 7; ++j)
    for (int i = 0; i < 7; ++i) total += (g[j][i] = std::exp(-((i - 3) * (i - 3) + (j - 3) * (j - 3)) / 8.f));
  for (int j = 0; j < 7; ++j)
    for (int i = 0; i < 7; ++i) g[j][i] /= total;
  CUDA_CHECK(cudaMemcpyToSymbol(c_gauss, g, sizeof(g)));
  std::vector<uchar> img(size_t(w) * h);
  gpa::Lcg rng(3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = uchar(rng.next() & 0xFF);
  uchar* dsrc = gpa::to_device(img);
  uchar* ddst = gpa::device_alloc<uchar>(img.size());
  const dim3 grid((w + kBlock.x - 1) / kBlock.x, (h + kBlock.y - 1) / kBlock.y);
  auto launch = [&] { gaussian_filter_7x7<<<grid, kBlock>>>(w, h, dsrc, ddst); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<uchar> out = gpa::to_host(ddst, img.size());
  auto ref = [&](size_t idx) {
    const int x = int(idx % w), y = int(idx / w);
    double sum = 0.0;
    for (int j = -3; j <= 3; ++j)
      for (int i = -3; i <= 3; ++i) {
        const int yy = std::min(std::max(y + j, 0), h - 1), xx = std::min(std::max(x + i, 0), w - 1);
        sum += g[j + 3][i + 3] * img[size_t(yy) * w + xx];
      }
    return std::min(255.0, std::floor(sum + 0.5));
  };
  gpa::check_close(out, ref, out.size(), 0.0, 1.0, "blurred pixels (every 61st)", 61);

  gpa::time_kernel("gaussian_filter_7x7", opt, launch);
  return 0;
}
