// Per-row symmetric int8 quantization of activations, as before an int8 GEMM:
// x is a row-major float matrix of rows = 16384 tokens by cols = 4096 features
// (268 MB), inv_scale[r] = 127 / max |x[r][:]| was computed per row beforehand
// (a reduction kernel, here on the host), and q[r][c] = (int8) clamp(rint(x[r][c]
// * inv_scale[r]), -127, 127) (67 MB). One thread per element, the row from a
// division i / cols by the run-time int cols, as a first port of the CPU loop
// writes it.
// Performance problem (prior): each thread has one 4-byte load in flight (128
// bytes per warp), so an SM holds at most 8 KB of input in flight while its
// share of the DRAM stream needs several times that; the per-row scale is an
// L1 hit (one 4-byte word per warp) and the 1-byte stores are 32 bytes per warp.
//
// Variant uint4_16: each thread maps 16 consecutive elements of one row (cols is a
// multiple of 16), read as four float4 (LDG.E.128 each, 64 contiguous bytes per
// lane: each warp load touches 32 sectors of which it uses half) and written as
// one uint4 of 16 int8 (STG.E.128: 512 contiguous bytes per warp), with one
// division per 16 elements; a sixteenth of the threads.
#include "../../common/harness.cuh"

__device__ __forceinline__ signed char quant(float x, float s) {
  return (signed char)fminf(fmaxf(rintf(x * s), -127.f), 127.f);
}

__global__ void quantize_rows_int8(signed char* q, const float* x, const float* inv_scale, int cols,
                                   int n) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // elements 16j .. 16j + 15 (one row)
  const int i = 16 * j;
  if (i >= n) return;
  const int r = i / cols;
  const float4* xv = reinterpret_cast<const float4*>(x) + 4 * j;
  const float s = inv_scale[r];
  uint4 out;
  char4* o = reinterpret_cast<char4*>(&out);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float4 v = xv[k];
    o[k] = make_char4(quant(v.x, s), quant(v.y, s), quant(v.z, s), quant(v.w, s));
  }
  reinterpret_cast<uint4*>(q)[j] = out;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 16384, cols = 4096, n = rows * cols;
  gpa::Lcg rng(223);
  // activations roughly normal (a sum of four uniforms) with a per-row spread and
  // a few outlier features, as in a transformer's residual stream
  std::vector<float> x(static_cast<size_t>(n)), inv_scale(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const float spread = rng.uniform(0.2f, 3.f);
    float amax = 0.f;
    for (int c = 0; c < cols; ++c) {
      float s = rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) + rng.uniform(-1.f, 1.f) +
                rng.uniform(-1.f, 1.f);
      if (c % 512 == 7) s *= 12.f;  // outlier features
      const float v = spread * s;
      x[size_t(r) * cols + c] = v;
      amax = std::max(amax, std::fabs(v));
    }
    inv_scale[r] = amax > 0.f ? 127.f / amax : 1.f;
  }
  float* dx = gpa::to_device(x);
  float* dinv = gpa::to_device(inv_scale);
  // 0x80 (-128) everywhere: no output is -128, a missed element fails the check
  signed char* dq = gpa::device_alloc<signed char>(size_t(n));
  CUDA_CHECK(cudaMemset(dq, 0x80, size_t(n)));
  if (cols % 16) gpa::fail("cols must be a multiple of 16 for 16-byte vectors");
  const int block = 256, grid = (n / 16 + block - 1) / block;
  auto launch = [&] { quantize_rows_int8<<<grid, block>>>(dq, dx, dinv, cols, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element exactly against the same float product rounded to nearest even
  std::vector<signed char> got = gpa::to_host(dq, size_t(n));
  auto ref = [&](size_t e) {
    const float v = std::nearbyint(x[e] * inv_scale[e / cols]);
    return double(std::min(std::max(v, -127.f), 127.f));
  };
  gpa::check_close(got, ref, size_t(n), 0.0, 0.0, "q");

  gpa::time_kernel("quantize_rows_int8", opt, launch);
  return 0;
}
