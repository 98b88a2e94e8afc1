// Tensor permutation with runtime shapes (GPA's ExaTENSOR transpose): every
// element's output position comes from integer division and modulo by the
// runtime extents. Each `/` by a runtime value is a long multi-instruction
// sequence (I2F, MUFU.RCP, F2I, corrections) on the critical path.
#include "../../common/harness.cuh"

constexpr int kDims = 6;

struct Shape {
  int n[kDims];            // extents of the input, innermost first
  int out_stride[kDims];   // stride of each input dimension in the output
  unsigned magic[kDims];   // n[k] as a multiply-shift divider (see main)
  int shift[kDims];
};

__global__ void permute(const float* __restrict__ in, float* __restrict__ out, Shape s, int total) {
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
    unsigned r = idx;  // unsigned division: no sign fix-ups
    int o = 0;
#pragma unroll
    for (int k = 0; k < kDims; ++k) {
      const unsigned q = r / unsigned(s.n[k]);
      o += int(r - q * unsigned(s.n[k])) * s.out_stride[k];
      r = q;
    }
    out[o] = in[idx];
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n[kDims] = {32, 12, 10, 14, 18, 50};
  const int perm[kDims] = {0, 3, 1, 5, 2, 4};  // output dimension order, innermost first
  Shape s;
  int total = 1;
  for (int k = 0; k < kDims; ++k) s.n[k] = n[k], total *= n[k];
  for (int j = 0, stride = 1; j < kDims; stride *= n[perm[j]], ++j) s.out_stride[perm[j]] = stride;
  // exact for r < 2^31: q = (r * magic) >> shift, magic = ceil(2^shift / d), shift = 31 + ceil(log2 d)
  for (int k = 0; k < kDims; ++k) {
    int l = 0;
    while ((1u << l) < unsigned(n[k])) ++l;
    s.shift[k] = 31 + l;
    s.magic[k] = unsigned(((1ull << s.shift[k]) + n[k] - 1) / n[k]);
  }
  std::vector<float> in(total);
  for (int i = 0; i < total; ++i) in[i] = float(i);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(total);
  const int block = 256, grid = 132 * 16;
  auto launch = [&] { permute<<<grid, block>>>(din, dout, s, total); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, total);
  std::vector<float> want(total);
  for (int idx = 0; idx < total; ++idx) {
    int r = idx, o = 0;
    for (int k = 0; k < kDims; ++k) o += (r % n[k]) * s.out_stride[k], r /= n[k];
    want[o] = in[idx];
  }
  gpa::check_close(got, [&](size_t i) { return double(want[i]); }, got.size(), 0.0, 0.0, "permuted tensor");

  gpa::time_kernel("permute", opt, launch);
  return 0;
}
