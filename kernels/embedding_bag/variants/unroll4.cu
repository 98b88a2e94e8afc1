// Sum-pooled embedding lookup (EmbeddingBag with mode "sum", SparseLengthsSum):
// a table of 2^20 rows x 64 floats (256 MB), 65536 bags of 1 to 40 row ids
// (offsets give each bag's first id), out[b] = the sum of its rows. One thread
// per bag, each walking its ids and, for each id, the 64 floats of the row
// into 64 register accumulators.
// Performance problem: at every step the 32 lanes of a warp read 32 unrelated
// rows, so each load touches 32 lines (32 sectors for 128 useful bytes); the
// lines are used again by the lane's next 31 loads, so the cost is L1 work per
// request (and DRAM latency per step with 16 warps per SM) more than bytes.
// Bags differ in length, so a warp also runs as long as its longest bag.
//
// Variant unroll4: #pragma unroll 4 on the loop over the bag's ids (line 20,
// run-time trip count).
#include "../../common/harness.cuh"

constexpr int kDim = 64;

__global__ void embedding_bag_sum(float* out, const float* table, const int* ids, const int* offsets, int bags) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= bags) return;
  float acc[kDim];
  for (int d = 0; d < kDim; ++d) acc[d] = 0.f;
#pragma unroll 4
  for (int j = offsets[b]; j < offsets[b + 1]; ++j) {
    const float* row = table + size_t(ids[j]) * kDim;
    for (int d = 0; d < kDim; ++d) acc[d] += row[d];
  }
  for (int d = 0; d < kDim; ++d) out[size_t(b) * kDim + d] = acc[d];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 1 << 20, bags = 1 << 16;
  gpa::Lcg rng(43);
  std::vector<float> table(size_t(rows) * kDim);
  for (auto& v : table) v = rng.uniform(-1.f, 1.f);
  std::vector<int> offsets(bags + 1, 0);
  for (int b = 0; b < bags; ++b) offsets[b + 1] = offsets[b] + 1 + int(rng.next() % 40);
  std::vector<int> ids(offsets[bags]);
  for (auto& v : ids) v = int(rng.next() % rows);
  float* dtable = gpa::to_device(table);
  int* dids = gpa::to_device(ids);
  int* doff = gpa::to_device(offsets);
  float* dout = gpa::device_alloc<float>(size_t(bags) * kDim);
  const int block = 256, grid = (bags + block - 1) / block;
  auto launch = [&] { embedding_bag_sum<<<grid, block>>>(dout, dtable, dids, doff, bags); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every 3rd output element (bag e / 64, dimension e % 64)
  std::vector<float> got = gpa::to_host(dout, size_t(bags) * kDim);
  auto ref = [&](size_t e) {
    const size_t b = e / kDim, d = e % kDim;
    double s = 0.0;
    for (int j = offsets[b]; j < offsets[b + 1]; ++j) s += table[size_t(ids[j]) * kDim + d];
    return s;
  };
  gpa::check_close(got, ref, size_t(bags) * kDim, 1e-5, 1e-4, "out (every 3rd element)", 3);

  gpa::time_kernel("embedding_bag_sum", opt, launch);
  return 0;
}
