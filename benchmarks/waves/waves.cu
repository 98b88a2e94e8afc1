// Time vs number of blocks on one GPU: what Block Increase's wave model assumes (analysis/waves.py).
//
// Four kernels, each timed at grids from a few blocks to several waves (a wave: SMs x resident
// blocks per SM, from cudaOccupancyMaxActiveBlocksPerMultiprocessor):
//   fixed_chain  fixed work per thread (a dependent FMA chain, one store): more blocks are more work;
//                within a wave that does not saturate the schedulers the time should stay flat,
//                then grow by a step per wave.
//   stride_chain the same total work (2^21 chains) in a grid-stride loop: more blocks are more warps
//                for the same work; the time should fall until a full wave and not after.
//   stride_sum   a grid-stride sum of 2^26 floats (DRAM): falls with the loads in flight until DRAM
//                bandwidth binds.
//   spread_chain 2^16 threads of fixed work as B blocks of 2^16/B threads: the same warps spread
//                over more SMs.
// Prints one JSON line per (kernel, blocks, threads): median of 20 timed launches after a warm-up.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int kChain = 2048;      // dependent FMAs per item

__device__ __forceinline__ float chain(float x) {
#pragma unroll 16
  for (int k = 0; k < kChain; ++k) x = fmaf(x, 1.0001f, 0.5f);
  return x;
}

__global__ void fixed_chain(float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = chain(float(i));
}

__global__ void stride_chain(float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = chain(float(i));
}

__global__ void stride_sum(float* total, const float* x, int n) {
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) atomicAdd(total, s);
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
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static void emit(const char* kernel, int blocks, int threads, int resident, int sms, float ms) {
  std::printf("{\"kernel\": \"%s\", \"blocks\": %d, \"threads\": %d, \"resident\": %d, \"sms\": %d, "
              "\"waves\": %.4f, \"ms\": %.5f}\n", kernel, blocks, threads, resident, sms,
              double(blocks) / (double(sms) * resident), ms);
  std::fflush(stdout);
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount, threads = 256;
  std::fprintf(stderr, "%s, %d SMs\n", prop.name, sms);
  int res_fixed = 0, res_stride = 0, res_sum = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&res_fixed, fixed_chain, threads, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&res_stride, stride_chain, threads, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&res_sum, stride_sum, threads, 0));
  const int wave = sms * res_fixed;
  const int n_chain = 1 << 21, n_sum = 1 << 26;
  float *out, *x, *total;
  CK(cudaMalloc(&out, sizeof(float) * std::max(n_chain, 8 * wave * threads)));
  CK(cudaMalloc(&x, sizeof(float) * n_sum));
  CK(cudaMalloc(&total, sizeof(float)));
  CK(cudaMemset(x, 0, sizeof(float) * n_sum));

  // grids in units of SMs and waves: idle SMs, partial waves, full waves, tails
  const double fractions[] = {0.125, 0.25, 0.5, 1.0, 2.0, 4.0};        // x SMs
  const double wave_mult[] = {0.25, 0.5, 0.75, 1.0, 1.03, 1.25, 1.5, 2.0, 2.03, 3.0};  // x waves
  std::vector<int> grids;
  for (double f : fractions) grids.push_back(std::max(1, int(f * sms)));
  for (double m : wave_mult) grids.push_back(std::max(1, int(m * wave + 0.5)));
  std::sort(grids.begin(), grids.end());
  grids.erase(std::unique(grids.begin(), grids.end()), grids.end());

  for (int g : grids) emit("fixed_chain", g, threads, res_fixed, sms, median_ms([&] { fixed_chain<<<g, threads>>>(out); }));
  for (int g : grids) emit("stride_chain", g, threads, res_stride, sms, median_ms([&] { stride_chain<<<g, threads>>>(out, n_chain); }));
  for (int g : grids)
    emit("stride_sum", g, threads, res_sum, sms, median_ms([&] {
      cudaMemsetAsync(total, 0, sizeof(float));
      stride_sum<<<g, threads>>>(total, x, n_sum);
    }));
  for (int tpb : {1024, 512, 256, 128, 64}) {
    const int g = (1 << 16) / tpb;
    int res = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&res, fixed_chain, tpb, 0));
    emit("spread_chain", g, tpb, res, sms, median_ms([&] { fixed_chain<<<g, tpb>>>(out); }));
  }
  CK(cudaGetLastError());
  return 0;
}
