// shared/samples/probe.cu with the round count from argv: a longer harness for the overhead benchmark
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// hotspot-like stencil with double constants (strength reduction target)
__global__ void stencil(const float* __restrict__ in, float* out, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= 0 || i >= n - 1) return;
  float v = in[i];
  for (int k = 0; k < iters; ++k) {
    v = v + 0.5 * (in[i - 1] + in[i + 1] - 2.0 * v);
  }
  out[i] = v;
}

// dynamically indexed local array (register spill / local memory target)
__global__ void localarr(const float* in, float* out, int n, int sel) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float row[16];
  for (int j = 0; j < 16; ++j) row[j] = in[(i + j) % n];
  float acc = 0.f;
  for (int j = 0; j < 64; ++j) acc += row[(j * sel + i) & 15];
  out[i] = acc;
}

// pointer chasing reduction loop (latency bound, loop unrolling / reordering target)
__global__ void chase(const int* next, const float* val, float* out, int n, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int p = i;
  float acc = 0.f;
  for (int s = 0; s < steps; ++s) {
    acc += logf(val[p] + 1.0f);
    p = next[p];
  }
  out[i] = acc;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  int n = 1 << 22;
  float *in, *out; int* nx;
  cudaMalloc(&in, n * sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&nx, n * sizeof(int));
  int* h = (int*)malloc(n * sizeof(int));
  for (int i = 0; i < n; ++i) h[i] = (int)((i * 2654435761u) % n);
  cudaMemcpy(nx, h, n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(in, 0, n * sizeof(float));
  for (int r = 0; r < rounds; ++r) {
    stencil<<<n / 256, 256>>>(in, out, n, 64);
    localarr<<<n / 256, 256>>>(in, out, n, 3);
    chase<<<n / 256, 256>>>(nx, in, out, n, 32);
  }
  cudaError_t e = cudaDeviceSynchronize();
  printf("done: %s\n", cudaGetErrorString(e));
  return 0;
}
