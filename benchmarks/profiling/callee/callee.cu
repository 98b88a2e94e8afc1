#include <cstdio>
#include <cuda_runtime.h>

// A non-inlined device function: checks that both collectors put its PCs at the
// same offsets (CUPTI's pcOffset vs ncu's address minus the kernel's first address).
__device__ __noinline__ float slow_step(const float* a, int i, int n) {
  float s = 0.f;
  for (int k = 0; k < 16; ++k) s += sqrtf(a[(i * 7 + k * 131) % n] + 1.0f);
  return s;
}

__global__ void caller(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.f;
  for (int r = 0; r < 8; ++r) acc += slow_step(a, i + r, n);
  out[i] = acc;
}

int main() {
  int n = 1 << 22;
  float *a, *out;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float));
  for (int r = 0; r < 4; ++r) caller<<<n / 256, 256>>>(a, out, n);
  cudaError_t e = cudaDeviceSynchronize();
  printf("done: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
