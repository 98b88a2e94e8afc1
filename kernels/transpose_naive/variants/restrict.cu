// Out-of-place transpose of a row-major 8192 x 4096 float matrix (128 MB) into
// a 4096 x 8192 one, one thread per element in 32 x 32 blocks, written the way
// the first transpose of a CUDA tutorial is: x (the column of `in`) comes from
// threadIdx.x, y (its row) from threadIdx.y, and out[x * rows + y] = in[y * cols + x].
// Performance problem: the 32 lanes of a warp share y and hold 32 consecutive
// x, so the read of `in` is one 128-byte line per warp but the write of `out`
// puts 4 bytes in each of 32 lines 32 KB apart (32 sectors per request for 128
// useful bytes). The other 31 warps of the block fill the rest of those lines,
// so the bytes reaching DRAM are close to the ideal; the cost is the 32 sectors
// of every store request in the L1 and L2.
//
// Variant restrict: __restrict__ on out, const __restrict__ on in (line 13 of original.cu): the
// load may become LDG.E.CONSTANT; one load and one store per thread, no loop.
#include "../../common/harness.cuh"

__global__ void transpose_naive(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 8192, cols = 4096;
  std::vector<float> in(size_t(rows) * cols);
  gpa::Lcg rng(47);
  for (auto& v : in) v = rng.uniform(-1.f, 1.f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(size_t(rows) * cols);
  const dim3 block(32, 32), grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
  auto launch = [&] { transpose_naive<<<grid, block>>>(dout, din, rows, cols); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element, exactly: out is cols x rows, element e = x * rows + y holds in[y * cols + x]
  std::vector<float> got = gpa::to_host(dout, size_t(rows) * cols);
  auto ref = [&](size_t e) { return double(in[(e % rows) * cols + e / rows]); };
  gpa::check_close(got, ref, size_t(rows) * cols, 0.0, 0.0, "out (every element)");

  gpa::time_kernel("transpose_naive", opt, launch);
  return 0;
}
