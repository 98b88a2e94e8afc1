// Which stall reason does a wait on a register-indexed constant load (LDC) show on Hopper?
//
// The blamer splits a dependency stall over the defs its use waits on, by GPA's category of the
// stall's reason: long_scoreboard (memory dependency) and short_scoreboard (execution dependency).
// nvcc puts an LDC (kernel parameters, __constant__ arrays indexed by a register) and a global load
// on the same scoreboard at times, so a use waits on both, and the reason is the hardware's only
// word on which one it waited for. Two chases of the same length, one warp per scheduler so every
// wait shows: `cchase` walks a __constant__ table (each index the previous load's value: LDC after
// LDC), `gchase` the same table in global memory (LDG after LDG). PC sampling (gpa profile) then
// says which reason each chase's waits carry.
#include <cstdio>

constexpr int kTable = 4096;   // 16 KB: fits the constant bank (64 KB) and its caches
__constant__ int c_next[kTable];

__global__ void cchase(int* out, int start, int steps) {
  int p = (start + threadIdx.x) & (kTable - 1);
  for (int s = 0; s < steps; ++s) p = c_next[p];
  out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

__global__ void gchase(int* out, const int* next, int start, int steps) {
  int p = (start + threadIdx.x) & (kTable - 1);
  for (int s = 0; s < steps; ++s) p = next[p];
  out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

int main() {
  int host[kTable];
  for (int i = 0; i < kTable; ++i) host[i] = (i * 1103 + 7) & (kTable - 1);   // a permutation-like walk
  cudaMemcpyToSymbol(c_next, host, sizeof(host));
  int *next = nullptr, *out = nullptr;
  cudaMalloc(&next, sizeof(host));
  cudaMemcpy(next, host, sizeof(host), cudaMemcpyHostToDevice);
  const int blocks = 132 * 4, threads = 32;     // one warp per scheduler
  cudaMalloc(&out, blocks * threads * sizeof(int));
  for (int r = 0; r < 3; ++r) {
    cchase<<<blocks, threads>>>(out, r, 20000);
    gchase<<<blocks, threads>>>(out, next, r, 20000);
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
