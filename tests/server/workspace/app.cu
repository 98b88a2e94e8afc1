// gpa-lsp language-server test workspace: one small program with several
// things the advisor can point at (double literals in float code, a read-only
// pointer without __restrict__, a non-inlined device function in a hot loop,
// small literal blocks).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ __noinline__ float smooth(float a, float b)
{
    return a * 0.75 + b * 0.25;
}

__global__ void relax(float *out, float *in, int n, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = in[i];
    for (int k = 0; k < iters; ++k) {
        float nb = in[(i + k) % n];
        acc = smooth(acc, nb) * 1.0001 + 0.5;
    }
    out[i] = acc;
}

int main(int argc, char **argv)
{
    int n = 1 << 20;
    int iters = argc > 1 ? atoi(argv[1]) : 256;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    for (int rep = 0; rep < 3; ++rep)
        relax<<<(n + 31) / 32, 32>>>(out, in, n, iters);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }
    printf("ok\n");
    return 0;
}
