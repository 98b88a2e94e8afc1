// What one global atomic costs the L2 on a contended counter, by the operation and by where the
// other counters of the loop sit (issue 15, Atomic Privatization). atomics.cu measures unsigned
// adds of 1 to hist[key]; a kernel's reduction may add floats, or two totals per element in one
// 32-byte sector (a sum and a sum of squares). Each pattern: a grid-stride loop over 2^24 floats
// in [0.5, 1.5), 2048 x 256 threads, its atomics to counters zeroed before each launch, median of
// 20 launches (events). Prints one JSON line per pattern: atomics per launch, ms, ns per atomic. Then the
// keyed sweep: unsigned +1 and float +v to one of 1..16384 counters by a hash of the index.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int kN = 1 << 24;
constexpr int kGrid = 2048, kBlock = 256;

// pattern: 0 u32 +1 on one counter; 1 f32 +v on one counter; 2 f32 v and v*v on two counters of one
// sector; 3 f32 v and v*v on counters 128 bytes apart; 4 u32 +1 on two counters of one sector;
// 5 f64 +v on one counter
template <int P>
__global__ void reduce_atomic(const float* x, void* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    // the counter's index from the data (always 0: v > 0), as a loaded key is: nvcc folds the adds of
    // a warp to one compile-time-uniform address into one atomic per warp, which no key allows
    const unsigned k = __float_as_uint(v) >> 31;
    if constexpr (P == 0) atomicAdd(static_cast<unsigned*>(c) + k, 1u);
    if constexpr (P == 1) atomicAdd(static_cast<float*>(c) + k, v);
    if constexpr (P == 2) { atomicAdd(static_cast<float*>(c) + k, v); atomicAdd(static_cast<float*>(c) + k + 1, v * v); }
    if constexpr (P == 3) { atomicAdd(static_cast<float*>(c) + k, v); atomicAdd(static_cast<float*>(c) + k + 32, v * v); }
    if constexpr (P == 4) { atomicAdd(static_cast<unsigned*>(c) + k, 1u); atomicAdd(static_cast<unsigned*>(c) + k + 1, 1u); }
    if constexpr (P == 5) atomicAdd(static_cast<double*>(c) + k, double(v));
  }
}

// keyed: the same adds to one of `bins` counters picked by a hash of the element's index (atomics.cu's
// random pattern), unsigned +1 (F = 0) or float +v (F = 1)
template <int F>
__global__ void keyed_atomic(const float* x, void* c, int n, unsigned bins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    unsigned h = unsigned(i) * 2654435761u + 0x9e3779b9u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    const unsigned k = h % bins;
    if constexpr (F == 0) atomicAdd(static_cast<unsigned*>(c) + k, 1u);
    if constexpr (F == 1) atomicAdd(static_cast<float*>(c) + k, v);
  }
}

// the same keyed adds privatized: a per-block copy of the counters in shared memory, one global add
// per non-zero counter and block (atomics.cu's private_hist), unsigned +1 (F = 0) or float +v (F = 1)
template <int F>
__global__ void keyed_private(const float* x, void* c, int n, unsigned bins) {
  extern __shared__ unsigned local[];
  for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0u;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    unsigned h = unsigned(i) * 2654435761u + 0x9e3779b9u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    const unsigned k = h % bins;
    if constexpr (F == 0) atomicAdd(&local[k], 1u);
    if constexpr (F == 1) atomicAdd(reinterpret_cast<float*>(local) + k, v);
  }
  __syncthreads();
  for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
    if constexpr (F == 0) { if (local[b]) atomicAdd(static_cast<unsigned*>(c) + b, local[b]); }
    if constexpr (F == 1) { const float s = reinterpret_cast<float*>(local)[b]; if (s != 0.f) atomicAdd(static_cast<float*>(c) + b, s); }
  }
}

template <class F>
static float median_ms(F launch, int runs = 20) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  cudaDeviceSynchronize();
  std::vector<float> t;
  for (int r = 0; r < runs; ++r) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t[t.size() / 2];
}

template <int P>
static int run(const char* name, const float* x, void* c, int per_element) {
  CK(cudaMemset(c, 0, 4096));
  const float ms = median_ms([&] { reduce_atomic<P><<<kGrid, kBlock>>>(x, c, kN); });
  CK(cudaGetLastError());
  const double atomics = double(kN) * per_element;
  std::printf("{\"pattern\": \"%s\", \"n\": %d, \"atomics\": %.0f, \"ms\": %.5f, \"ns_per_atomic\": %.5f}\n", name, kN,
              atomics, ms, ms * 1e6 / atomics);
  std::fflush(stdout);
  return 0;
}

template <int F>
static int keyed(const char* name, const float* x, void* c, unsigned bins) {
  CK(cudaMemset(c, 0, sizeof(float) * 16384));
  const float ms = median_ms([&] { keyed_atomic<F><<<kGrid, kBlock>>>(x, c, kN, bins); });
  CK(cudaGetLastError());
  const size_t smem = sizeof(unsigned) * bins;
  CK(cudaFuncSetAttribute(keyed_private<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384 * 4));
  const float pms = median_ms([&] { keyed_private<F><<<kGrid, kBlock, smem>>>(x, c, kN, bins); });
  CK(cudaGetLastError());
  std::printf("{\"pattern\": \"%s\", \"bins\": %u, \"n\": %d, \"atomics\": %d, \"ms\": %.5f, \"ns_per_atomic\": %.5f, "
              "\"private_ms\": %.5f}\n", name, bins, kN, kN, ms, ms * 1e6 / kN, pms);
  std::fflush(stdout);
  return 0;
}

int main() {
  std::vector<float> h(kN);
  unsigned s = 12345u;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = 0.5f + float(s >> 8) / float(1u << 24); }
  float* x;
  void* c;
  CK(cudaMalloc(&x, sizeof(float) * kN));
  CK(cudaMalloc(&c, sizeof(float) * 16384));
  CK(cudaMemcpy(x, h.data(), sizeof(float) * kN, cudaMemcpyHostToDevice));
  if (run<0>("u32_one", x, c, 1) || run<1>("f32_one", x, c, 1) || run<2>("f32_pair_sector", x, c, 2) ||
      run<3>("f32_pair_apart", x, c, 2) || run<4>("u32_pair_sector", x, c, 2) || run<5>("f64_one", x, c, 1))
    return 1;
  for (unsigned bins : {1u, 8u, 32u, 256u, 1024u, 4096u, 16384u})
    if (keyed<0>("u32_keyed", x, c, bins) || keyed<1>("f32_keyed", x, c, bins)) return 1;
  return 0;
}
