// What loading the next tap early costs and buys in a run-time tap nest, as the issue slots fill.
//
// Code Reordering's advice ("issue loads earlier: prefetch the next iteration's data") hides a load's
// latency by loading an iteration ahead; in a loop nest with run-time bounds and a boundary guard the
// loop must then find the next tap (the inner index wraps into the outer one) and guard its load one
// iteration early. The calibration case kernels/structure_tensor (issue at 82% of peak) measured that
// prefetch at 0.43x; prefetch_reorder and kde_tiled (28-44% issue) gained 1.13x and 1.14x. This probe
// varies the one thing the Code Reordering ceiling (code_reordering.prefetch_ceiling) says decides it,
// the issue share, on one tap nest:
//
//   taps_fF         s += f(coef[t] * in[guarded y + dy, x + dx]) over a (2r+1)^2 window, r = 2 at run
//                   time, F dependent FMAs per tap (1, 4, 16: more arithmetic per load, more issue)
//   taps_fF_pre     the same taps, the next tap's coordinates, guard, input and coefficient loaded an
//                   iteration early (the advice carried out as kernels/structure_tensor's variant did)
//   ... _lowW       both at 8 warps per SM (dynamic shared memory the kernel does not use limits the
//                   blocks), where the scheduler idles and the latency is exposed
//
// One thread per pixel of a 4096 x 4096 float image, blocks of 32 x 8.
//
//   prefetch_probe           runs every configuration once (for ncu)
//   prefetch_probe --time    median of 5 timed runs of each configuration
//   prefetch_probe --list    one line per configuration, in launch order
#include "../coalescing/probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

constexpr int W = 4096, H = 4096;

template <int F>
__device__ __forceinline__ float work(float v, float c, float s) {
#pragma unroll
  for (int k = 0; k < F; ++k) {
    s = fmaf(v, c, s);
    v = fmaf(v, 0.999f, 0.001f);
  }
  return s;
}

__device__ __forceinline__ float tap(const float* in, int x, int y, int w, int h) {
  return (x >= 0 && x < w && y >= 0 && y < h) ? in[y * w + x] : 0.f;
}

template <int F>
__global__ void __launch_bounds__(256) taps(float* out, const float* in, const float* coef, int w, int h, int r) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int side = 2 * r + 1;
  float s = 0.f;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx)
      s = work<F>(tap(in, x + dx, y + dy, w, h), coef[(dy + r) * side + dx + r], s);
  out[y * w + x] = s;
}

template <int F>
__global__ void __launch_bounds__(256) taps_pre(float* out, const float* in, const float* coef, int w, int h, int r) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int side = 2 * r + 1, n = side * side;
  int dy = -r, dx = -r;
  float v = tap(in, x + dx, y + dy, w, h), c = coef[0], s = 0.f;
#pragma unroll 1
  for (int t = 0; t < n; ++t) {
    int ndx = dx + 1, ndy = dy;
    if (ndx > r) { ndx = -r; ++ndy; }
    float nv = 0.f, nc = 0.f;
    if (t + 1 < n) { nv = tap(in, x + ndx, y + ndy, w, h); nc = coef[t + 1]; }
    s = work<F>(v, c, s);
    v = nv; c = nc; dx = ndx; dy = ndy;
  }
  out[y * w + x] = s;
}

using Kern = void (*)(float*, const float*, const float*, int, int, int);
struct Mode {
  const char* name;
  Kern k;
};
static const Mode kModes[] = {{"taps_f1", taps<1>},         {"taps_f1_pre", taps_pre<1>},
                              {"taps_f4", taps<4>},         {"taps_f4_pre", taps_pre<4>},
                              {"taps_f16", taps<16>},       {"taps_f16_pre", taps_pre<16>}};
static const int kWarps[] = {8, 64};

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int smem_sm = 228 * 1024;
  float *in = nullptr, *out = nullptr, *coef = nullptr;
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    std::vector<float> h(size_t(W) * H), c(25);
    for (size_t i = 0; i < h.size(); ++i) h[i] = float(i % 97) * 0.01f;
    for (int i = 0; i < 25; ++i) c[i] = 0.04f + 0.001f * i;
    CHECK(cudaMalloc(&in, h.size() * sizeof(float)));
    CHECK(cudaMalloc(&out, h.size() * sizeof(float)));
    CHECK(cudaMalloc(&coef, c.size() * sizeof(float)));
    CHECK(cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(coef, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  const dim3 block(32, 8), grid(W / 32, H / 8);
  for (const Mode& md : kModes) {
    for (int warps : kWarps) {
      if (list) {
        std::printf("%s warps_per_sm=%d\n", md.name, warps);
        continue;
      }
      const int blocks_per_sm = warps / 8;
      const int smem = blocks_per_sm >= 8 ? 0 : (smem_sm / (blocks_per_sm + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto go = [&] { md.k<<<grid, block, smem>>>(out, in, coef, W, H, 2); };
      float median = 0.f;
      CHECK(run_or_time(go, timed, a, b, &median));
      if (timed) std::printf("%s warps_per_sm=%d median_ms=%.5f\n", md.name, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
