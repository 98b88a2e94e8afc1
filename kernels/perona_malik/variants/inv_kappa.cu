// One explicit step of Perona-Malik anisotropic diffusion on a 4096 x 4096 float image, over a
// (2R+1) x (2R+1) neighbourhood: for every neighbour q of pixel p, d = u(q) - u(p), the conduction
// coefficient g = exp(-(d / kappa)^2) (small across edges, near 1 inside flat regions) and a distance
// weight 1 / (1 + |q - p|^2); the step moves u(p) by lambda times the weighted mean of the d.
// Replicated borders. Written as a first port is: the radius R, kappa and lambda are run-time
// arguments, one thread per pixel in 32 x 8 blocks; per tap an IEEE division by the loop-invariant
// kappa, a full-precision expf and an IEEE division by the distance term.
#include "../../common/harness.cuh"

__global__ void perona_malik(float* out, const float* in, int H, int W, int R, float kappa, float lambda) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const float c = in[y * W + x];
  float num = 0.f, den = 0.f;
  const float inv_kappa = 1.f / kappa;
  for (int dy = -R; dy <= R; ++dy) {
    const int yy = min(max(y + dy, 0), H - 1);
    for (int dx = -R; dx <= R; ++dx) {
      const int xx = min(max(x + dx, 0), W - 1);
      const float d = in[yy * W + xx] - c;
      const float t = d * inv_kappa;
      const float g = expf(-t * t);
      const float w = g / (1.f + float(dx * dx + dy * dy));
      num += w * d;
      den += w;
    }
  }
  out[y * W + x] = c + lambda * num / den;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int H = 4096, W = 4096, R = 2;
  const float kappa = 0.1f, lambda = 0.25f;
  const size_t n = size_t(H) * W;
  // a checkerboard of 64 x 64 squares at 0.3 and 0.7 (edges the step must keep) plus uniform noise
  // of +-0.08 (what it smooths): g near 1 for noise differences, ~1e-7 across an edge
  std::vector<float> img(n);
  gpa::Lcg rng(71);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      img[size_t(y) * W + x] = (((x >> 6) + (y >> 6)) & 1 ? 0.7f : 0.3f) + rng.uniform(-0.08f, 0.08f);
  float* din = gpa::to_device(img);
  float* dout = gpa::device_alloc<float>(n);
  const dim3 block(32, 8), grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
  auto launch = [&] { perona_malik<<<grid, block>>>(dout, din, H, W, R, kappa, lambda); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // the step's update out - u (exact in float: out is within 10% of u) of every 101st pixel against a
  // double reference: 1e-3 relative tolerates fast math's approximate exp and reciprocals (~1e-6),
  // while a wrong tap, weight, kappa or normalisation moves most updates by 1e-2 or more
  auto update = [&](size_t e) {
    const int x = int(e % W), y = int(e / W);
    const double c = img[e];
    double num = 0, den = 0;
    for (int dy = -R; dy <= R; ++dy)
      for (int dx = -R; dx <= R; ++dx) {
        const int yy = std::min(std::max(y + dy, 0), H - 1), xx = std::min(std::max(x + dx, 0), W - 1);
        const double d = img[size_t(yy) * W + xx] - c;
        const double w = std::exp(-(d / kappa) * (d / kappa)) / (1.0 + dx * dx + dy * dy);
        num += w * d;
        den += w;
      }
    return lambda * num / den;
  };
  std::vector<float> out = gpa::to_host(dout, n);
  for (size_t i = 0; i < n; ++i) out[i] -= img[i];
  gpa::check_close(out, update, n, 1e-3, 1e-6, "update (every 101st pixel)", 101);

  gpa::time_kernel("perona_malik", opt, launch);
  return 0;
}
