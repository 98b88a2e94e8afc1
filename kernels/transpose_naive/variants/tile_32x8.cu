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
// Variant tile_32x8: what Global Memory Coalescing's advice says for a kernel read along one index
// and written along another (written after that advice existed, to judge it as given): a 32 x 32
// tile padded to 33 columns, loaded along in's fastest index, a __syncthreads(), stored along
// out's; 32 x 8 threads each moving 4 elements (so every warp keeps 4 lines in flight and blocks
// stay at 256 threads). tile_padded is the same tile moved one element per thread in 32 x 32 blocks.
#include "../../common/harness.cuh"

constexpr int kTile = 32;   // the tile is kTile x kTile elements
constexpr int kRows = 8;    // the block is kTile x kRows threads (the launch below)

__global__ void transpose_naive(float* out, const float* in, int rows, int cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int bx = blockIdx.x * kTile, by = blockIdx.y * kTile;
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int x = bx + threadIdx.x, y = by + threadIdx.y + j;
    if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[y * cols + x];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int x = by + threadIdx.x;       // the column of out: a row of in
    const int y = bx + threadIdx.y + j;   // the row of out: a column of in
    if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 8192, cols = 4096;
  std::vector<float> in(size_t(rows) * cols);
  gpa::Lcg rng(47);
  for (auto& v : in) v = rng.uniform(-1.f, 1.f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(size_t(rows) * cols);
  const dim3 block(kTile, kRows), grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
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
