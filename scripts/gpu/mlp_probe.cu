// How much of the DRAM's peak a streaming loop reaches with a given number of
// bytes of loads in flight per SM (memory-level parallelism, MLP).
//
// Each warp runs a grid-stride loop that issues M independent loads (of one
// element type: 4 or 16 bytes per thread), then consumes them: stores them
// (copy) or adds them up (read). Nothing overlaps one iteration's loads with
// the next's (`#pragma unroll 1`), so a warp has M x 32 x sizeof(T) bytes in
// flight at a time, and W warps per SM have F = W x M x 32 x sizeof(T).
// Little's law then sets the bandwidth: F x SMs / loaded latency.
//
// Run under ncu by scripts/gpu/record_mlp.sh; the table it writes
// (gpa_lsp/data/memory_parallelism.json) is what the advisor's MLP bound
// reads: see gpa_lsp/analysis/parallelism.py.
//
//   mlp_probe            runs every configuration once (after one warm-up)
//   mlp_probe --list     prints one line per configuration, in launch order
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error %s: %s\n", #call, cudaGetErrorString(e_));       \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)

template <typename T>
__device__ __forceinline__ float sum_of(const T& v);
template <>
__device__ __forceinline__ float sum_of<float>(const float& v) { return v; }
template <>
__device__ __forceinline__ float sum_of<float4>(const float4& v) { return v.x + v.y + v.z + v.w; }

template <typename T, int M, bool COPY>
__global__ void __launch_bounds__(256) stream(const T* __restrict__ in, T* __restrict__ out, long n, float* sink) {
  const long stride = long(gridDim.x) * blockDim.x;
  float acc = 0.f;
#pragma unroll 1
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i + (M - 1) * stride < n; i += M * stride) {
    T v[M];
#pragma unroll
    for (int k = 0; k < M; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < M; ++k) {
      if (COPY)
        out[i + k * stride] = v[k];
      else
        acc += sum_of(v[k]);
    }
  }
  if (!COPY && acc == 1234.5f) *sink = acc;  // keeps the loads; never true for the zero input
}

struct Config {
  const char* name;
  void (*kernel)(const void*, void*, long, float*, int, int);
  int m, bytes, copy;
};

template <typename T, int M, bool COPY>
void launch(const void* in, void* out, long bytes, float* sink, int grid, int block) {
  stream<T, M, COPY><<<grid, block>>>(static_cast<const T*>(in), static_cast<T*>(out), bytes / long(sizeof(T)), sink);
}

#define CFG(T, M, COPY, KIND) {#T "_m" #M "_" KIND, launch<T, M, COPY>, M, int(sizeof(T)), COPY}
static const Config kConfigs[] = {
    CFG(float, 1, true, "copy"),  CFG(float, 2, true, "copy"),  CFG(float, 4, true, "copy"),  CFG(float, 8, true, "copy"),
    CFG(float, 1, false, "read"), CFG(float, 2, false, "read"), CFG(float, 4, false, "read"), CFG(float, 8, false, "read"),
    CFG(float4, 1, true, "copy"), CFG(float4, 2, true, "copy"), CFG(float4, 1, false, "read"), CFG(float4, 2, false, "read"),
};
static const int kBlocksPerSm[] = {1, 2, 4, 8};  // x 8 warps: 8, 16, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  int sms = 0;
  if (!list) CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long bytes = 1L << 30;  // 1 GiB each way: far beyond L2, every access reaches DRAM
  void *in = nullptr, *out = nullptr;
  float* sink = nullptr;
  if (!list) {
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMalloc(&sink, sizeof(float)));
    CHECK(cudaMemset(in, 0, bytes));
  }
  const int block = 256;
  for (const Config& c : kConfigs) {
    for (int b : kBlocksPerSm) {
      const int warps = b * block / 32;
      const long inflight = long(warps) * c.m * 32 * c.bytes;
      if (list) {
        std::printf("%s warps_per_sm=%d inflight_bytes_per_sm=%ld copy=%d\n", c.name, warps, inflight, c.copy);
        continue;
      }
      c.kernel(in, out, bytes, sink, sms * b, block);  // warm-up (ncu skips it)
      c.kernel(in, out, bytes, sink, sms * b, block);  // measured
      CHECK(cudaGetLastError());
    }
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
