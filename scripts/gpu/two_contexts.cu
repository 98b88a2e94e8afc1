// Device check of the CUPTI collector with two contexts (driver API cuCtxCreate) in one process.
//
// Context 0 runs `spin` for ~0.6 s on 132 blocks, then `scale` 3 times, and is destroyed
// explicitly (the context-destroy flush); context 1 runs `spin` for ~0.3 s on 264 blocks and
// `scale` 2 times and lives until exit (the atexit flush). A single long `spin` is what the
// periodic drain is for. Prints each spin's time measured with CUDA events, to compare with
// the kernel activity record's duration.
//
//   nvcc -O3 -arch=sm_90 -lineinfo -o two_contexts two_contexts.cu
// (the driver entry points are taken from libcuda.so.1 with dlsym: no link-time libcuda needed)
#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { std::printf("%s failed: %d\n", #x, (int)r_); std::exit(1); } } while (0)
#define CR(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { std::printf("%s failed: %s\n", #x, cudaGetErrorString(r_)); std::exit(1); } } while (0)

__global__ void spin(float *out, long long cycles)
{
    long long t0 = clock64();
    float x = (float)threadIdx.x;
    while (clock64() - t0 < cycles) x = x * 1.0001f + 0.5f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

__global__ void scale(float *a, float s)
{
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = a[i];
    __syncthreads();
    a[i] = tile[blockDim.x - 1 - threadIdx.x] * s;
}

static void work(int which, long long cycles, int blocks, int scales)
{
    float *buf;
    CR(cudaMalloc(&buf, (size_t)blocks * 256 * sizeof(float)));
    CR(cudaMemset(buf, 0, (size_t)blocks * 256 * sizeof(float)));
    cudaEvent_t a, b;
    CR(cudaEventCreate(&a));
    CR(cudaEventCreate(&b));
    CR(cudaEventRecord(a));
    spin<<<blocks, 128>>>(buf, cycles);
    CR(cudaEventRecord(b));
    for (int k = 0; k < scales; k++) scale<<<blocks, 256>>>(buf, 1.5f);
    CR(cudaDeviceSynchronize());
    float ms = 0;
    CR(cudaEventElapsedTime(&ms, a, b));
    std::printf("context %d: spin %d blocks %.3f ms (events), scale x%d\n", which, blocks, ms, scales);
    CR(cudaFree(buf));
}

typedef CUresult (*PFN_Init)(unsigned);
typedef CUresult (*PFN_DeviceGet)(CUdevice *, int);
typedef CUresult (*PFN_DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*PFN_CtxCreate4)(CUcontext *, void *, unsigned, CUdevice);
typedef CUresult (*PFN_CtxCreate2)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*PFN_CtxSetCurrent)(CUcontext);
typedef CUresult (*PFN_CtxDestroy)(CUcontext);

int main()
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { std::printf("no libcuda.so.1\n"); return 1; }
    PFN_Init cuInit = (PFN_Init)dlsym(h, "cuInit");
    PFN_DeviceGet cuDeviceGet = (PFN_DeviceGet)dlsym(h, "cuDeviceGet");
    PFN_DeviceGetAttribute cuDeviceGetAttribute = (PFN_DeviceGetAttribute)dlsym(h, "cuDeviceGetAttribute");
    PFN_CtxCreate4 create4 = (PFN_CtxCreate4)dlsym(h, "cuCtxCreate_v4");
    PFN_CtxCreate2 create2 = (PFN_CtxCreate2)dlsym(h, "cuCtxCreate_v2");
    PFN_CtxSetCurrent cuCtxSetCurrent = (PFN_CtxSetCurrent)dlsym(h, "cuCtxSetCurrent");
    PFN_CtxDestroy cuCtxDestroy = (PFN_CtxDestroy)dlsym(h, "cuCtxDestroy_v2");
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    int khz = 0;
    CK(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
    CUcontext ctx[2];
    for (int i = 0; i < 2; i++) {
        if (create4) CK(create4(&ctx[i], nullptr, 0, dev));
        else CK(create2(&ctx[i], 0, dev));
    }
    long long per_ms = (long long)khz;  // cycles per millisecond
    CK(cuCtxSetCurrent(ctx[0]));
    work(0, 600 * per_ms, 132, 3);
    CK(cuCtxSetCurrent(ctx[1]));
    work(1, 300 * per_ms, 264, 2);
    CK(cuCtxDestroy(ctx[0]));
    std::printf("done\n");
    return 0;
}
