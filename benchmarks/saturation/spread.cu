// The same warps spread over more SMs (Block Increase's fixed-work path): a grid of fewer blocks
// than SMs in 256-thread blocks against the same threads in 64-thread blocks on every SM.
//
// Each thread walks its own row of `cols` floats (`rowwalk`: lane l reads row r = its thread's,
// the 32 lanes of a warp 32 rows apart, so each warp load touches 32 lines and the L1's work per
// request is 32 lines; the next 7 loads of a lane hit its sector in L1) or the same elements stored
// column-major (`colwalk`: element i of row r at i * rows + r, every request coalesced), with `alu`
// dependent FMAs on each element (the issue's share). One thread per row, `rows` rows: `rows / 256`
// blocks of 256 threads (32, 64, 96: fewer than the H100's 132 SMs) or `rows / 64` blocks of 64.
//
//   spread            prints one JSON line per (walk, rows, alu, block): median of 9 timed launches
//   spread --ncu      launches every 256-thread configuration once, in the same order (for ncu)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void rowwalk(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int alu) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* x = in + size_t(r) * cols;
  float s = 0.f;
  for (int i = 0; i < cols; ++i) {
    float v = x[i];
    for (int k = 0; k < alu; ++k) v = fmaf(v, 1.0001f, 0.5f);
    s += v;
  }
  out[r] = s;
}

__global__ void colwalk(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int alu) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int i = 0; i < cols; ++i) {
    float v = in[size_t(i) * rows + r];
    for (int k = 0; k < alu; ++k) v = fmaf(v, 1.0001f, 0.5f);
    s += v;
  }
  out[r] = s;
}

int main(int argc, char** argv) {
  const bool ncu = argc > 1 && !std::strcmp(argv[1], "--ncu");
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int cols = 1024, most = 96 * 256;
  float *in, *out;
  CK(cudaMalloc(&in, sizeof(float) * size_t(most) * cols));
  CK(cudaMalloc(&out, sizeof(float) * most));
  CK(cudaMemset(in, 0, sizeof(float) * size_t(most) * cols));
  const int rowss[] = {32 * 256, 64 * 256, 96 * 256};
  const int alus[] = {0, 8, 32};
  const int blocks[] = {256, 64};
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int walk = 0; walk < 2; ++walk)
    for (int rows : rowss)
      for (int alu : alus)
        for (int bs : blocks) {
          if (ncu && bs != 256) continue;
          const int grid = rows / bs;
          auto go = [&] {
            if (walk == 0) rowwalk<<<grid, bs>>>(in, out, rows, cols, alu);
            else colwalk<<<grid, bs>>>(in, out, rows, cols, alu);
          };
          if (ncu) { go(); CK(cudaDeviceSynchronize()); continue; }
          go();
          CK(cudaDeviceSynchronize());
          std::vector<float> t;
          for (int k = 0; k < 9; ++k) {
            cudaEventRecord(a);
            go();
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float ms;
            cudaEventElapsedTime(&ms, a, b);
            t.push_back(ms);
          }
          std::sort(t.begin(), t.end());
          std::printf("{\"probe\": \"spread\", \"walk\": \"%s\", \"rows\": %d, \"cols\": %d, \"alu\": %d, \"block\": %d, "
                      "\"blocks\": %d, \"sms\": %d, \"ms\": %.5f}\n", walk ? "colwalk" : "rowwalk", rows, cols, alu, bs,
                      grid, sms, t[t.size() / 2]);
        }
  CK(cudaDeviceSynchronize());
  return 0;
}
