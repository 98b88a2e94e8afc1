// Tiled matrix transpose through shared memory: a 32x32 float tile is written
// by rows and read by columns. With `tile[32][32]` the 32 threads of a warp read
// one column, whose elements all sit in the same bank: 32-way bank conflicts.
#include "../../common/harness.cuh"

constexpr int kTile = 32;
constexpr int kRows = 8;  // a block of 32x8 threads moves a 32x32 tile

__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  __shared__ float tile[kTile][kTile];
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows) tile[threadIdx.y + j][threadIdx.x ^ (threadIdx.y + j)] = in[(y + j) * w + x];  // XOR swizzle
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows) out[(y + j) * h + x] = tile[threadIdx.x][(threadIdx.y + j) ^ threadIdx.x];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 16384, h = 8192;
  std::vector<float> in(size_t(w) * h);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 1000003);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(in.size());
  const dim3 block(kTile, kRows), grid(w / kTile, h / kTile);
  auto launch = [&] { transpose<<<grid, block>>>(din, dout, w, h); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, in.size());
  // out is h wide and w tall: out[c * h + r] = in[r * w + c]
  auto ref = [&](size_t i) { return double(in[(i % h) * w + i / h]); };
  gpa::check_close(got, ref, got.size(), 0.0, 0.0, "transposed matrix (every 3rd)", 3);

  gpa::time_kernel("transpose", opt, launch);
  return 0;
}
