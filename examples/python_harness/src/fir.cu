// Compiled when harness.py runs, by NVRTC (cuda.bindings.nvrtc), and loaded with cuModuleLoadData:
// no file on disk holds this cubin, the CUPTI collector saves it as the driver loads it.
// A bank of 9-tap filters, 4 outputs per thread. `in` and `taps` are only read, but they are
// plain pointers: after each store to `out` the compiler must load them again.
extern "C" __global__ void fir_bank(float* out, float* in, float* taps, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (base + 4 > n) return;
#pragma unroll
  for (int o = 0; o < 4; ++o) {
    float s = 0.f;
#pragma unroll
    for (int t = 0; t < 9; ++t) s += in[base + o + t] * taps[t];
    out[base + o] = s;
  }
}
