// What `const T* __restrict__` changes on sm_90, measured: four kernels, each built with plain and
// with const __restrict__ pointers (the macro RP), same work, timed with CUDA events (median of 30
// launches after 5 warm-ups). Prints one JSON line per kernel. Read by benchmarks/restrict/README.md.
//
//  stream   one element per thread: load a[i], b[i], store out[i]. Nothing to reorder or reuse:
//           only LDG -> LDG.E.CONSTANT changes (the read-only path, one cache with L1 on sm_90).
//  gather   a read-only loop (run-time trip count) accumulating a[idx[k]]: no store in the loop,
//           so aliasing cannot block anything: only the .CONSTANT bit changes.
//  hoist    a grid-stride loop whose iteration stores out[i] between the loads of consecutive
//           iterations, unrolled by 4: without restrict each iteration's loads wait behind the
//           previous iteration's store in program order; with it the compiler batches 4 loads.
//  hoist_low  the same loop with 4 warps per SM (132 blocks of 128 threads): latency is exposed.
//  barrier  a loop whose load follows a __syncthreads(): a read-only (.CONSTANT) load may move
//           above the barrier, a plain one may not (launched with 8 warps per SM).
//  reload   8 outputs per thread from overlapping windows of in[] and coef[] with stores in
//           between: without restrict every input is loaded again after each store.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA error %s\n", cudaGetErrorString(e)); return 2; } } while (0)

#define KERNELS(SUFFIX, RP)                                                                                  \
__global__ void stream_##SUFFIX(float* out, RP a, RP b, int n) {                                             \
  int i = blockIdx.x * blockDim.x + threadIdx.x;                                                              \
  if (i < n) out[i] = a[i] * 1.5f + b[i];                                                                     \
}                                                                                                             \
__global__ void gather_##SUFFIX(float* out, RP a, const int* idx, int n, int len) {                          \
  int i = blockIdx.x * blockDim.x + threadIdx.x;                                                              \
  if (i >= n) return;                                                                                         \
  float s = 0.f;                                                                                              \
  for (int k = 0; k < len; ++k) s += a[idx[(i + k * 977) & (n - 1)]];                                        \
  out[i] = s;                                                                                                 \
}                                                                                                             \
__global__ void hoist_##SUFFIX(float* out, RP a, RP b, int n) {                                              \
  int stride = gridDim.x * blockDim.x;                                                                        \
  _Pragma("unroll 4")                                                                                         \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = a[i] * b[i] + 1.f;       \
}                                                                                                             \
__global__ void hoist_low_##SUFFIX(float* out, RP a, RP b, int n) {                                          \
  int stride = gridDim.x * blockDim.x;                                                                        \
  _Pragma("unroll 4")                                                                                         \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = a[i] * b[i] + 1.f;       \
}                                                                                                             \
__global__ void barrier_##SUFFIX(float* out, RP a, int n, int steps) {                                      \
  __shared__ float t[256];                                                                                    \
  int i = blockIdx.x * blockDim.x + threadIdx.x;                                                              \
  float acc = 0.f;                                                                                            \
  for (int s = 0; s < steps; ++s) {                                                                           \
    t[threadIdx.x] = acc;                                                                                     \
    __syncthreads();                                                                                          \
    acc += a[(i + s * 4099) & (n - 1)] * t[(threadIdx.x + 1) & 255];                                        \
    __syncthreads();                                                                                          \
  }                                                                                                           \
  out[i] = acc;                                                                                               \
}                                                                                                             \
__global__ void reload_##SUFFIX(float* out, RP in, RP coef, int n) {                                         \
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * 8;                                                     \
  if (base + 8 > n) return;                                                                                   \
  _Pragma("unroll")                                                                                           \
  for (int o = 0; o < 8; ++o) {                                                                               \
    float s = 0.f;                                                                                            \
    _Pragma("unroll")                                                                                         \
    for (int t = 0; t < 16; ++t) s += in[base + o + t] * coef[t];                                            \
    out[base + o] = s;                                                                                        \
  }                                                                                                           \
}

KERNELS(plain, float*)
KERNELS(restrict, const float* __restrict__)

template <typename F>
float time_ms(F launch) {
  for (int i = 0; i < 5; ++i) launch();
  cudaDeviceSynchronize();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms(30);
  for (auto& m : ms) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&m, a, b);
  }
  std::sort(ms.begin(), ms.end());
  return 0.5f * (ms[14] + ms[15]);
}

int main(int argc, char** argv) {
  // --profile: each plain kernel launched 3 times, untimed (gpa.toml's harness: the advice on them)
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  const int n = 1 << 24, len = 64;
  float *out, *a, *b;
  int* idx;
  CHECK(cudaMalloc(&out, (n + 16) * sizeof(float)));
  CHECK(cudaMalloc(&a, (n + 16) * sizeof(float)));
  CHECK(cudaMalloc(&b, (n + 16) * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(int)));
  std::vector<int> h(n);
  unsigned s = 12345;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = int(s >> 8) & (n - 1); }
  CHECK(cudaMemcpy(idx, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(a, 0, (n + 16) * sizeof(float)));
  CHECK(cudaMemset(b, 0, (n + 16) * sizeof(float)));
  const int T = 256, G = (n + T - 1) / T;
  if (profile) {
    for (int r = 0; r < 3; ++r) {
      stream_plain<<<G, T>>>(out, a, b, n);
      gather_plain<<<G, T>>>(out, a, idx, n, len);
      hoist_plain<<<132 * 8, T>>>(out, a, b, n);
      hoist_low_plain<<<132, 128>>>(out, a, b, n);
      barrier_plain<<<132 * 2, T>>>(out, a, n, 256);
      reload_plain<<<n / 8 / T, T>>>(out, a, b, n);
    }
    CHECK(cudaDeviceSynchronize());
    return 0;
  }
  struct Row { const char* name; float plain, restr; };
  Row rows[] = {
    {"stream", time_ms([&] { stream_plain<<<G, T>>>(out, a, b, n); }), time_ms([&] { stream_restrict<<<G, T>>>(out, a, b, n); })},
    {"gather", time_ms([&] { gather_plain<<<G, T>>>(out, a, idx, n, len); }), time_ms([&] { gather_restrict<<<G, T>>>(out, a, idx, n, len); })},
    {"hoist", time_ms([&] { hoist_plain<<<132 * 8, T>>>(out, a, b, n); }), time_ms([&] { hoist_restrict<<<132 * 8, T>>>(out, a, b, n); })},
    {"hoist_low", time_ms([&] { hoist_low_plain<<<132, 128>>>(out, a, b, n); }), time_ms([&] { hoist_low_restrict<<<132, 128>>>(out, a, b, n); })},
    {"barrier", time_ms([&] { barrier_plain<<<132 * 2, T>>>(out, a, n, 256); }), time_ms([&] { barrier_restrict<<<132 * 2, T>>>(out, a, n, 256); })},
    {"reload", time_ms([&] { reload_plain<<<n / 8 / T, T>>>(out, a, b, n); }), time_ms([&] { reload_restrict<<<n / 8 / T, T>>>(out, a, b, n); })},
  };
  CHECK(cudaGetLastError());
  for (auto& r : rows)
    std::printf("{\"kernel\": \"%s\", \"plain_ms\": %.5f, \"restrict_ms\": %.5f, \"speedup\": %.3f}\n", r.name, r.plain,
                r.restr, r.plain / r.restr);
  return 0;
}
