// Where the blocks that get work run: a grid of `grid` blocks of 64 threads (dot_runtime_unroll's
// shape) in which only the first `busy` blocks work (a block-level grid-stride loop with fewer items
// than blocks, 396 of 2112) and the rest exit at once. Prints, per (grid, busy), how many SMs got a
// busy block, the most busy blocks one SM got, and the kernel's time (median of 10).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void __launch_bounds__(64, 1) work(int* smid, float* out, int busy, int iters) {
  if (blockIdx.x >= busy) return;
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  if (threadIdx.x == 0) smid[blockIdx.x] = int(id);
  float x = threadIdx.x;
#pragma unroll 16
  for (int k = 0; k < iters; ++k) x = fmaf(x, 1.0001f, 0.5f);
  out[blockIdx.x * 64 + threadIdx.x] = x;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int resident = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, work, 64, 0));
  int *smid;
  float* out;
  CK(cudaMalloc(&smid, sizeof(int) * 8192));
  CK(cudaMalloc(&out, sizeof(float) * 8192 * 64));
  const int grids[] = {132, 396, 2112};
  const int busys[] = {132, 396};
  for (int busy : busys)
    for (int grid : grids) {
      if (grid < busy) continue;
      cudaEvent_t a, b;
      cudaEventCreate(&a);
      cudaEventCreate(&b);
      work<<<grid, 64>>>(smid, out, busy, 1 << 16);
      CK(cudaDeviceSynchronize());
      std::vector<float> t;
      for (int r = 0; r < 10; ++r) {
        cudaEventRecord(a);
        work<<<grid, 64>>>(smid, out, busy, 1 << 16);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      std::vector<int> h(busy);
      CK(cudaMemcpy(h.data(), smid, sizeof(int) * busy, cudaMemcpyDeviceToHost));
      std::vector<int> per(1024, 0);
      for (int s : h) per[s]++;
      int mx = 0, used = 0;
      for (int c : per) { mx = std::max(mx, c); used += c > 0; }
      std::printf("{\"probe\": \"placement\", \"grid\": %d, \"busy\": %d, \"resident\": %d, \"sms\": %d, \"sms_used\": %d, "
                  "\"max_per_sm\": %d, \"ms\": %.5f}\n", grid, busy, resident, sms, used, mx, t[t.size() / 2]);
    }
  return 0;
}
