// Global atomic throughput against address contention, and the same work privatized in shared memory:
// what Atomic Privatization's estimate reads (gpa_lsp/data/atomics.json, benchmarks/atomics/table.py).
//
// Every kernel reads the same 2^24 32-bit keys in a grid-stride loop (2048 blocks of 256 threads, as
// a typical histogram launch) and adds 1 to counter key % bins:
//   global   atomicAdd(&hist[bin], 1) in global memory (a REDG: fire-and-forget, done at the L2)
//   private  atomicAdd on a per-block copy in shared memory (ATOMS), then one global atomicAdd per
//            non-empty bin per block (the flush): the textbook privatized histogram
//   stream   the loop without atomics (the keys summed, one store per thread): the floor
// at bins = 1, 8, 32, 256, 1024, 4096, 16384 (private up to 16384: 64 KB of shared memory per block)
// and, for global, 2^20 and 2^24 (no two keys share a counter), with two key patterns:
//   random   each key uniform in [0, bins): a warp's 32 lanes hit min(32, bins)-ish counters
//   warp     the 32 lanes of a warp share one key (uniform per warp): the same grid-wide spread, one
//            address per warp instruction
// Prints one JSON line per (kernel, pattern, bins): median of 20 timed launches after a warm-up,
// and the atomics per ns it amounts to.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int kN = 1 << 24;
constexpr int kGrid = 2048, kBlock = 256;

__global__ void fill_keys(unsigned* keys, int n, unsigned bins, int warp_uniform) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned x = warp_uniform ? unsigned(i / 32) : unsigned(i);
    x = x * 2654435761u + 0x9e3779b9u;       // a multiplicative hash, then xorshift: a spread of keys
    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13;
    keys[i] = x % bins;
  }
}

__global__ void global_hist(const unsigned* keys, unsigned* hist, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&hist[keys[i]], 1u);
}

__global__ void private_hist(const unsigned* keys, unsigned* hist, int n, int bins) {
  extern __shared__ unsigned local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[keys[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}

__global__ void stream_keys(const unsigned* keys, unsigned* out, int n) {
  unsigned s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += keys[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
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

static void line(const char* kernel, const char* pattern, long bins, float ms) {
  std::printf("{\"kernel\": \"%s\", \"pattern\": \"%s\", \"bins\": %ld, \"n\": %d, \"grid\": %d, \"block\": %d, "
              "\"ms\": %.5f, \"atomics_per_ns\": %.4f}\n", kernel, pattern, bins, kN, kGrid, kBlock, ms,
              kN / (ms * 1e6));
  std::fflush(stdout);
}

int main() {
  unsigned *keys, *hist, *out;
  CK(cudaMalloc(&keys, sizeof(unsigned) * kN));
  CK(cudaMalloc(&hist, sizeof(unsigned) * kN));
  CK(cudaMalloc(&out, sizeof(unsigned) * kGrid * kBlock));
  CK(cudaFuncSetAttribute(private_hist, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384 * 4));
  const long levels[] = {1, 8, 32, 256, 1024, 4096, 16384, 1 << 20, 1 << 24};
  const char* patterns[] = {"random", "warp"};
  for (int p = 0; p < 2; ++p) {
    for (long bins : levels) {
      fill_keys<<<kGrid, kBlock>>>(keys, kN, unsigned(bins), p);
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(hist, 0, sizeof(unsigned) * bins));
      // a check of the global kernel's counts on one launch: they must sum to n
      global_hist<<<kGrid, kBlock>>>(keys, hist, kN);
      CK(cudaDeviceSynchronize());
      std::vector<unsigned> h(bins);
      CK(cudaMemcpy(h.data(), hist, sizeof(unsigned) * bins, cudaMemcpyDeviceToHost));
      unsigned long long sum = 0;
      for (unsigned v : h) sum += v;
      if (sum != (unsigned long long)kN) { std::fprintf(stderr, "global counts sum to %llu\n", sum); return 1; }
      line("global", patterns[p], bins, median_ms([&] { global_hist<<<kGrid, kBlock>>>(keys, hist, kN); }));
      if (bins <= 16384) {
        const size_t smem = sizeof(unsigned) * bins;
        CK(cudaMemset(hist, 0, sizeof(unsigned) * bins));
        private_hist<<<kGrid, kBlock, smem>>>(keys, hist, kN, int(bins));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h.data(), hist, sizeof(unsigned) * bins, cudaMemcpyDeviceToHost));
        sum = 0;
        for (unsigned v : h) sum += v;
        if (sum != (unsigned long long)kN) { std::fprintf(stderr, "private counts sum to %llu\n", sum); return 1; }
        line("private", patterns[p], bins,
             median_ms([&] { private_hist<<<kGrid, kBlock, smem>>>(keys, hist, kN, int(bins)); }));
      }
      if (bins == 1) line("stream", patterns[p], 0, median_ms([&] { stream_keys<<<kGrid, kBlock>>>(keys, out, kN); }));
    }
  }
  CK(cudaGetLastError());
  return 0;
}
