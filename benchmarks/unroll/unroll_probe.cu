// What `#pragma unroll N` gains on a loop with a run-time trip count that nvcc already unrolled.
//
// Each thread walks n elements of one array (sum) or two (dot), coalesced across the grid
// (x[i * T + t]), accumulating into one register: the loads of different iterations are
// independent, the FFMA chain is the loop's recurrence. At -O3 nvcc unrolls such a loop by itself
// (an unrolled body plus a remainder loop: two or more SASS loops on the loop's source line) and
// hoists the loads of the unrolled iterations above their uses. The question for Loop Unrolling's
// advice (`#pragma unroll 4` on the loop line): does asking for an unroll the compiler already did,
// or a larger one, gain anything? Variants of the same loop: no pragma (nvcc's choice),
// `#pragma unroll 1` (no unrolling: one load in flight per warp), 4 and 8. Timed at 4 to 64 warps
// per SM (few warps: each warp's own loads in flight set the time; many: DRAM's bandwidth), each
// configuration walking 256 MB per array.
//
//   nvcc -O3 -arch=sm_90 -lineinfo -o unroll_probe unroll_probe.cu && ./unroll_probe > h200.jsonl
//
// Output: one JSON object per line: kernel, unroll ("default" or the pragma's N), warps_per_sm,
// n (elements per thread), ms (median of five, CUDA events, after a warm-up).
#include <cstdio>

#include "../coalescing/probe_timing.cuh"

constexpr int BLOCK = 128;

__global__ void sum_default(float* out, const float* x, int n, float s) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int i = 0; i < n; ++i) acc = fmaf(x[size_t(i) * T + t], s, acc);
  out[t] = acc;
}

template <int U>
__global__ void sum_pragma(float* out, const float* x, int n, float s) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
#pragma unroll U
  for (int i = 0; i < n; ++i) acc = fmaf(x[size_t(i) * T + t], s, acc);
  out[t] = acc;
}

__global__ void dot_default(float* out, const float* x, const float* y, int n) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int i = 0; i < n; ++i) acc = fmaf(x[size_t(i) * T + t], y[size_t(i) * T + t], acc);
  out[t] = acc;
}

template <int U>
__global__ void dot_pragma(float* out, const float* x, const float* y, int n) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
#pragma unroll U
  for (int i = 0; i < n; ++i) acc = fmaf(x[size_t(i) * T + t], y[size_t(i) * T + t], acc);
  out[t] = acc;
}

// `div`: the one-array walk with a float division per element (IEEE: an RCP, its refinement and a
// call to the slow path for the operands it cannot take, BSSY/CALL/BSYNC in the body).
__global__ void div_default(float* out, const float* x, int n, float s) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int i = 0; i < n; ++i) acc += s / x[size_t(i) * T + t];
  out[t] = acc;
}

template <int U>
__global__ void div_pragma(float* out, const float* x, int n, float s) {
  const int T = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
#pragma unroll U
  for (int i = 0; i < n; ++i) acc += s / x[size_t(i) * T + t];
  out[t] = acc;
}

// 1.0 .. 2.0 (the divisor): a constant fill, so every run divides the same values
__global__ void fill_ones(float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = 1.0f + float(i & 1023) / 1024.f;
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t elems = size_t(1) << 26;   // 256 MB per array
  float *x = nullptr, *y = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&x, elems * sizeof(float)));
  CHECK(cudaMalloc(&y, elems * sizeof(float)));
  CHECK(cudaMemset(x, 0, elems * sizeof(float)));
  CHECK(cudaMemset(y, 0, elems * sizeof(float)));
  fill_ones<<<1024, 256>>>(y, elems);
  CHECK(cudaGetLastError());
  CHECK(cudaMalloc(&out, size_t(sms) * 64 * 32 * sizeof(float)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int warps[] = {4, 8, 32, 64};
  for (int w : warps) {
    const int grid = sms * w / (BLOCK / 32);
    const int n = int(elems / (size_t(grid) * BLOCK));
    auto report = [&](const char* kernel, const char* unroll, auto go) -> int {
      float ms = 0.f;
      CHECK(median_ms(go, a, b, &ms));
      CHECK(cudaGetLastError());
      std::printf("{\"kernel\": \"%s\", \"unroll\": \"%s\", \"warps_per_sm\": %d, \"n\": %d, \"ms\": %.5f}\n",
                  kernel, unroll, w, n, ms);
      return 0;
    };
    int rc = 0;
    rc |= report("sum", "default", [&] { sum_default<<<grid, BLOCK>>>(out, x, n, 1.5f); });
    rc |= report("sum", "1", [&] { sum_pragma<1><<<grid, BLOCK>>>(out, x, n, 1.5f); });
    rc |= report("sum", "4", [&] { sum_pragma<4><<<grid, BLOCK>>>(out, x, n, 1.5f); });
    rc |= report("sum", "8", [&] { sum_pragma<8><<<grid, BLOCK>>>(out, x, n, 1.5f); });
    rc |= report("dot", "default", [&] { dot_default<<<grid, BLOCK>>>(out, x, y, n); });
    rc |= report("dot", "1", [&] { dot_pragma<1><<<grid, BLOCK>>>(out, x, y, n); });
    rc |= report("dot", "4", [&] { dot_pragma<4><<<grid, BLOCK>>>(out, x, y, n); });
    rc |= report("dot", "8", [&] { dot_pragma<8><<<grid, BLOCK>>>(out, x, y, n); });
    rc |= report("div", "default", [&] { div_default<<<grid, BLOCK>>>(out, y, n, 1.5f); });
    rc |= report("div", "1", [&] { div_pragma<1><<<grid, BLOCK>>>(out, y, n, 1.5f); });
    rc |= report("div", "4", [&] { div_pragma<4><<<grid, BLOCK>>>(out, y, n, 1.5f); });
    rc |= report("div", "8", [&] { div_pragma<8><<<grid, BLOCK>>>(out, y, n, 1.5f); });
    if (rc) return rc;
  }
  return 0;
}
