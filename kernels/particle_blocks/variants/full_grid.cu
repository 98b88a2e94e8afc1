// Particle-filter likelihood (seed 004, Rodinia particlefilter): each thread
// scores particles against the pixels of a disk around them. The launch uses
// 64 blocks of 1024 threads: fewer blocks than the H100's 132 SMs, so half of
// the GPU stays idle.
#include "../../common/harness.cuh"

typedef unsigned char uchar;

__global__ void likelihood_kernel(const float* __restrict__ xj, const float* __restrict__ yj,
                                  const int* __restrict__ dx, const int* __restrict__ dy,
                                  const uchar* __restrict__ img, float* __restrict__ likelihood,
                                  int nparticles, int count_ones, int w, int h) {
  const int stride = gridDim.x * blockDim.x;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < nparticles; p += stride) {
    const int x0 = __float2int_rn(xj[p]), y0 = __float2int_rn(yj[p]);
    float sum = 0.f;
    for (int k = 0; k < count_ones; ++k) {
      const int x = min(max(x0 + dx[k], 0), w - 1), y = min(max(y0 + dy[k], 0), h - 1);
      const float v = img[y * w + x];
      sum += ((v - 100.f) * (v - 100.f) - (v - 228.f) * (v - 228.f)) / 50.f;
    }
    likelihood[p] = sum / count_ones;
  }
}

static const int kBlocks = 132 * 2, kThreads = 1024;  // a full wave: 132 SMs x 2 resident blocks of 1024

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 1024, h = 1024, nparticles = 1 << 20, radius = 10;
  std::vector<int> dx, dy;
  for (int y = -radius; y <= radius; ++y)
    for (int x = -radius; x <= radius; ++x)
      if (x * x + y * y <= radius * radius) dx.push_back(x), dy.push_back(y);
  const int count_ones = int(dx.size());
  std::vector<uchar> img(size_t(w) * h);
  std::vector<float> px(nparticles), py(nparticles);
  gpa::Lcg rng(23);
  for (auto& v : img) v = uchar(rng.next() & 0xFF);
  for (int i = 0; i < nparticles; ++i) px[i] = rng.uniform(492.f, 532.f), py[i] = rng.uniform(492.f, 532.f);  // around the object
  float* dpx = gpa::to_device(px);
  float* dpy = gpa::to_device(py);
  int* ddx = gpa::to_device(dx);
  int* ddy = gpa::to_device(dy);
  uchar* dimg = gpa::to_device(img);
  float* dl = gpa::device_alloc<float>(nparticles);
  auto launch = [&] {
    likelihood_kernel<<<kBlocks, kThreads>>>(dpx, dpy, ddx, ddy, dimg, dl, nparticles, count_ones, w, h);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dl, nparticles);
  auto ref = [&](size_t p) {
    const int x0 = int(std::nearbyint(px[p])), y0 = int(std::nearbyint(py[p]));
    double sum = 0.0;
    for (int k = 0; k < count_ones; ++k) {
      const int x = std::min(std::max(x0 + dx[k], 0), w - 1), y = std::min(std::max(y0 + dy[k], 0), h - 1);
      const double v = img[size_t(y) * w + x];
      sum += ((v - 100.0) * (v - 100.0) - (v - 228.0) * (v - 228.0)) / 50.0;
    }
    return sum / count_ones;
  };
  gpa::check_close(got, ref, got.size(), 1e-4, 1e-3, "likelihoods (every 7th)", 7);

  gpa::time_kernel("likelihood_kernel", opt, launch);
  return 0;
}
