// Row gather (torch.index_select(table, 0, idx) on a 2-D float tensor), written the way a first
// port is: a table of 2^20 rows of 64 floats (256 bytes each, a 256 MB table), 2^19 output rows
// each copied from the table row idx[r] (random, with repeats). One thread per output row: it
// reads its index once, then walks the row one float at a time, a load and a store per step.
// Performance problem: out, table and idx are plain pointers that may alias, so the compiler
// must keep each store ahead of the next load: every thread runs a serial chain of 64 loads, each
// waiting for a DRAM round trip before its store and the next load. The 32 lanes of a warp hold
// 32 consecutive output rows, 256 bytes apart in out and scattered across the table, so every
// load and store request touches 32 lines for 4 bytes each.
#include "../../common/harness.cuh"

__global__ void index_select_rows(float* out, const float* table, const int* idx, int rows_out, int dim) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows_out) return;
  const float4* src = reinterpret_cast<const float4*>(table + size_t(idx[r]) * dim);  // dim % 4 == 0
  float4* dst = reinterpret_cast<float4*>(out + size_t(r) * dim);
  for (int d = 0; d < dim / 4; ++d) dst[d] = src[d];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 1 << 20, rows_out = 1 << 19, dim = 64;
  gpa::Lcg rng(83);
  std::vector<float> table(size_t(rows) * dim);
  for (auto& x : table) x = rng.uniform(-1.f, 1.f);
  std::vector<int> idx(rows_out);
  for (auto& x : idx) x = int(rng.next() % rows);
  float* dtable = gpa::to_device(table);
  int* didx = gpa::to_device(idx);
  float* dout = gpa::device_alloc<float>(size_t(rows_out) * dim);
  const int block = 256, grid = (rows_out + block - 1) / block;
  auto launch = [&] { index_select_rows<<<grid, block>>>(dout, dtable, didx, rows_out, dim); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element, exactly (a copy): out[r * dim + d] == table[idx[r] * dim + d]
  std::vector<float> got = gpa::to_host(dout, size_t(rows_out) * dim);
  auto ref = [&](size_t e) { return double(table[size_t(idx[e / dim]) * dim + e % dim]); };
  gpa::check_close(got, ref, size_t(rows_out) * dim, 0.0, 0.0, "out (every element, exact)");

  gpa::time_kernel("index_select_rows", opt, launch);
  return 0;
}
