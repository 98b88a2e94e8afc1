// Hotspot-style thermal stencil (seed 004, Rodinia hotspot): each block loads a
// 32x32 tile and runs kIter time steps in shared memory (pyramid), writing the
// exact inner 24x24 cells. The update multiplies by the double literal 2.0, so
// every float operand is converted to double and back (F2F): long fixed-latency
// conversions on the critical path.
#include "../../common/harness.cuh"

constexpr int kTile = 32;
constexpr int kIter = 4;
constexpr int kOut = kTile - 2 * kIter;

__global__ void __launch_bounds__(kTile * kTile)
calculate_temp(const float* __restrict__ power, const float* __restrict__ temp_src, float* __restrict__ temp_dst,
               int w, int h, float step_div_cap, float rx_1, float ry_1, float rz_1, float amb_temp) {
  __shared__ float temp_on_cuda[kTile][kTile];
  __shared__ float power_on_cuda[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int gx = blockIdx.x * kOut - kIter + tx;
  const int gy = blockIdx.y * kOut - kIter + ty;
  const int cx = min(max(gx, 0), w - 1), cy = min(max(gy, 0), h - 1);
  temp_on_cuda[ty][tx] = temp_src[cy * w + cx];
  power_on_cuda[ty][tx] = power[cy * w + cx];
  // neighbours: the cell itself at the chip's border (and at the tile's, whose cells are dropped)
  const int N = (ty == 0 || gy <= 0) ? ty : ty - 1;
  const int S = (ty == kTile - 1 || gy >= h - 1) ? ty : ty + 1;
  const int W = (tx == 0 || gx <= 0) ? tx : tx - 1;
  const int E = (tx == kTile - 1 || gx >= w - 1) ? tx : tx + 1;
  __syncthreads();
  for (int i = 0; i < kIter; ++i) {
    const float t = temp_on_cuda[ty][tx];
    const float next = t + step_div_cap * (power_on_cuda[ty][tx] +
        (temp_on_cuda[S][tx] + temp_on_cuda[N][tx] - 2.0 * t) * ry_1 +
        (temp_on_cuda[ty][E] + temp_on_cuda[ty][W] - 2.0 * t) * rx_1 + (amb_temp - t) * rz_1);
    __syncthreads();
    temp_on_cuda[ty][tx] = next;
    __syncthreads();
  }
  if (tx >= kIter && tx < kTile - kIter && ty >= kIter && ty < kTile - kIter && gx < w && gy < h)
    temp_dst[gy * w + gx] = temp_on_cuda[ty][tx];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 8192, h = 4096;
  const size_t n = size_t(w) * h;
  // a stable explicit step: step_div_cap * (2 * rx_1 + 2 * ry_1 + rz_1) < 1
  const float step_div_cap = 0.05f, rx_1 = 1.f, ry_1 = 1.f, rz_1 = 0.01f, amb = 80.f;

  std::vector<float> temp(n), power(n);
  gpa::Lcg rng(13);
  for (size_t i = 0; i < n; ++i) {
    temp[i] = rng.uniform(320.f, 340.f);
    power[i] = rng.uniform(0.f, 1.f);
  }
  float* dpow = gpa::to_device(power);
  float* dsrc = gpa::to_device(temp);
  float* ddst = gpa::device_alloc<float>(n);
  const dim3 block(kTile, kTile), grid((w + kOut - 1) / kOut, (h + kOut - 1) / kOut);
  auto launch = [&] {
    calculate_temp<<<grid, block>>>(dpow, dsrc, ddst, w, h, step_div_cap, rx_1, ry_1, rz_1, amb);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(ddst, n);
  std::vector<double> a(temp.begin(), temp.end()), b(n);
  for (int it = 0; it < kIter; ++it) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const size_t i = size_t(y) * w + x;
        const double t = a[i];
        const double N = a[size_t(std::max(y - 1, 0)) * w + x], S = a[size_t(std::min(y + 1, h - 1)) * w + x];
        const double W = a[i - (x > 0)], E = a[i + (x < w - 1)];
        b[i] = t + step_div_cap * (power[i] + (S + N - 2.0 * t) * ry_1 + (E + W - 2.0 * t) * rx_1 + (amb - t) * rz_1);
      }
    std::swap(a, b);
  }
  gpa::check_close(got, [&](size_t i) { return a[i]; }, n, 1e-5, 1e-3, "temperatures");

  gpa::time_kernel("calculate_temp", opt, launch);
  return 0;
}
