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
// The same with 2-byte and 1-byte keys (random pattern): the loop reads fewer bytes per atomic, so its
// floor (the stream kernel) is lower; the atomics are the same.
// Prints one JSON line per (kernel, pattern, bins, key bytes): median of 20 timed launches after a warm-up,
// and the atomics per ns it amounts to.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int kN = 1 << 24;
constexpr int kGrid = 2048, kBlock = 256;

template <class K>
__global__ void fill_keys(K* keys, int n, unsigned bins, int warp_uniform) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned x = warp_uniform ? unsigned(i / 32) : unsigned(i);
    x = x * 2654435761u + 0x9e3779b9u;       // a multiplicative hash, then xorshift: a spread of keys
    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13;
    keys[i] = K(x % bins);
  }
}

template <class K>
__global__ void global_hist(const K* keys, unsigned* hist, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&hist[keys[i]], 1u);
}

template <class K>
__global__ void private_hist(const K* keys, unsigned* hist, int n, int bins) {
  extern __shared__ unsigned local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[keys[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}

template <class K>
__global__ void stream_keys(const K* keys, unsigned* out, int n) {
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

static void line(const char* kernel, const char* pattern, long bins, int key_bytes, float ms) {
  std::printf("{\"kernel\": \"%s\", \"pattern\": \"%s\", \"bins\": %ld, \"key_bytes\": %d, \"n\": %d, \"grid\": %d, "
              "\"block\": %d, \"ms\": %.5f, \"atomics_per_ns\": %.4f}\n", kernel, pattern, bins, key_bytes, kN, kGrid,
              kBlock, ms, kN / (ms * 1e6));
  std::fflush(stdout);
}

static bool counts_ok(const unsigned* hist, long bins, const char* what) {
  std::vector<unsigned> h(bins);
  if (cudaMemcpy(h.data(), hist, sizeof(unsigned) * bins, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  unsigned long long sum = 0;
  for (unsigned v : h) sum += v;
  if (sum != (unsigned long long)kN) std::fprintf(stderr, "%s counts sum to %llu\n", what, sum);
  return sum == (unsigned long long)kN;
}

// every kernel at each level of `levels` (global always, private up to 16384 counters, stream once)
template <class K>
static int sweep(K* keys, unsigned* hist, unsigned* out, const long* levels, int nlevels, int patterns) {
  const char* names[] = {"random", "warp"};
  const int kb = int(sizeof(K));
  CK(cudaFuncSetAttribute(private_hist<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, 16384 * 4));
  for (int p = 0; p < patterns; ++p) {
    for (int l = 0; l < nlevels; ++l) {
      const long bins = levels[l];
      fill_keys<K><<<kGrid, kBlock>>>(keys, kN, unsigned(bins), p);
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(hist, 0, sizeof(unsigned) * bins));
      global_hist<K><<<kGrid, kBlock>>>(keys, hist, kN);   // one checked launch: counts sum to n
      CK(cudaDeviceSynchronize());
      if (!counts_ok(hist, bins, "global")) return 1;
      line("global", names[p], bins, kb, median_ms([&] { global_hist<K><<<kGrid, kBlock>>>(keys, hist, kN); }));
      if (bins <= 16384) {
        const size_t smem = sizeof(unsigned) * bins;
        CK(cudaMemset(hist, 0, sizeof(unsigned) * bins));
        private_hist<K><<<kGrid, kBlock, smem>>>(keys, hist, kN, int(bins));
        CK(cudaDeviceSynchronize());
        if (!counts_ok(hist, bins, "private")) return 1;
        line("private", names[p], bins, kb,
             median_ms([&] { private_hist<K><<<kGrid, kBlock, smem>>>(keys, hist, kN, int(bins)); }));
      }
      if (l == 0) line("stream", names[p], 0, kb, median_ms([&] { stream_keys<K><<<kGrid, kBlock>>>(keys, out, kN); }));
    }
  }
  return 0;
}

int main() {
  unsigned *keys, *hist, *out;
  CK(cudaMalloc(&keys, sizeof(unsigned) * kN));
  CK(cudaMalloc(&hist, sizeof(unsigned) * kN));
  CK(cudaMalloc(&out, sizeof(unsigned) * kGrid * kBlock));
  const long levels[] = {1, 8, 32, 256, 1024, 4096, 16384, 1 << 20, 1 << 24};
  const long levels16[] = {1, 8, 32, 256, 1024, 4096, 16384};
  const long levels8[] = {1, 8, 32, 256};
  // 4-byte keys, both patterns; then the same loop over 2- and 1-byte keys (random): the floor (the
  // bytes the loop reads per atomic) changes, the atomics do not
  if (sweep<unsigned>(keys, hist, out, levels, 9, 2)) return 1;
  if (sweep<unsigned short>(reinterpret_cast<unsigned short*>(keys), hist, out, levels16, 7, 1)) return 1;
  if (sweep<unsigned char>(reinterpret_cast<unsigned char*>(keys), hist, out, levels8, 4, 1)) return 1;
  CK(cudaGetLastError());
  return 0;
}
