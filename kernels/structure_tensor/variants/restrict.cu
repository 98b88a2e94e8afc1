// Multi-channel structure tensor (Di Zenzo's colour gradient): for every pixel of an
// 8-band 2048 x 2048 planar (CHW) float image, the x and y derivatives of each band
// by a (2R+1) x (2R+1) derivative-of-Gaussian window (zero padding at the borders),
// summed over the bands as J = sum_c (gx_c^2, gx_c gy_c, gy_c^2): three output planes.
// Written as a first port is: the radius R and the band count C are run-time arguments,
// the two derivative filters one float2 table in global memory. One thread per pixel,
// 32 x 8 blocks; per tap one load of the neighbouring input element behind the padding
// test, one float2 load of the tap's weights (one address for the whole warp) and two
// multiply-adds, with the index arithmetic and loop control of run-time loops.
//
// Variant restrict: __restrict__ on the outputs, const __restrict__ on img and taps (lines 14-15):
// the loads may use the read-only path (LDG.E.CONSTANT); the only stores are after the loops.
#include "../../common/harness.cuh"

__global__ void structure_tensor(float* __restrict__ jxx, float* __restrict__ jxy, float* __restrict__ jyy,
                                 const float* __restrict__ img, const float2* __restrict__ taps, int C, int H, int W, int R) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int D = 2 * R + 1;
  float sxx = 0.f, sxy = 0.f, syy = 0.f;
  for (int c = 0; c < C; ++c) {
    const float* plane = img + size_t(c) * H * W;
    float gx = 0.f, gy = 0.f;
    for (int r = -R; r <= R; ++r) {
      for (int s = -R; s <= R; ++s) {
        const int iy = y + r, ix = x + s;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
          const float v = plane[iy * W + ix];
          const float2 t = taps[(r + R) * D + s + R];
          gx += v * t.x;
          gy += v * t.y;
        }
      }
    }
    sxx += gx * gx;
    sxy += gx * gy;
    syy += gy * gy;
  }
  const int p = y * W + x;
  jxx[p] = sxx;
  jxy[p] = sxy;
  jyy[p] = syy;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int C = 8, H = 2048, W = 2048, R = 2, D = 2 * R + 1;
  const size_t n = size_t(H) * W;
  std::vector<float> img(size_t(C) * n);
  gpa::Lcg rng(67);
  for (auto& v : img) v = rng.uniform(0.f, 1.f);
  // derivative-of-Gaussian taps, sigma = 1: (d/dx, d/dy) of exp(-(r^2 + s^2) / 2)
  std::vector<float2> taps(D * D);
  for (int r = -R; r <= R; ++r)
    for (int s = -R; s <= R; ++s) {
      const float g = std::exp(-0.5f * float(r * r + s * s)) / 6.2831853f;
      taps[(r + R) * D + s + R] = make_float2(-float(s) * g, -float(r) * g);
    }
  float* dimg = gpa::to_device(img);
  float2* dtaps = gpa::to_device(taps);
  float* dxx = gpa::device_alloc<float>(n);
  float* dxy = gpa::device_alloc<float>(n);
  float* dyy = gpa::device_alloc<float>(n);
  const dim3 block(32, 8), grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
  auto launch = [&] { structure_tensor<<<grid, block>>>(dxx, dxy, dyy, dimg, dtaps, C, H, W, R); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 101st pixel of the three planes against a double reference
  auto tensor = [&](size_t e, int which) {
    const int x = int(e % W), y = int(e / W);
    double sxx = 0, sxy = 0, syy = 0;
    for (int c = 0; c < C; ++c) {
      double gx = 0, gy = 0;
      for (int r = -R; r <= R; ++r)
        for (int s = -R; s <= R; ++s) {
          const int iy = y + r, ix = x + s;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
          const double v = img[size_t(c) * n + size_t(iy) * W + ix];
          gx += v * taps[(r + R) * D + s + R].x;
          gy += v * taps[(r + R) * D + s + R].y;
        }
      sxx += gx * gx, sxy += gx * gy, syy += gy * gy;
    }
    return which == 0 ? sxx : which == 1 ? sxy : syy;
  };
  gpa::check_close(gpa::to_host(dxx, n), [&](size_t e) { return tensor(e, 0); }, n, 1e-4, 1e-5, "jxx (every 101st pixel)", 101);
  gpa::check_close(gpa::to_host(dxy, n), [&](size_t e) { return tensor(e, 1); }, n, 1e-4, 1e-5, "jxy (every 101st pixel)", 101);
  gpa::check_close(gpa::to_host(dyy, n), [&](size_t e) { return tensor(e, 2); }, n, 1e-4, 1e-5, "jyy (every 101st pixel)", 101);

  gpa::time_kernel("structure_tensor", opt, launch);
  return 0;
}
