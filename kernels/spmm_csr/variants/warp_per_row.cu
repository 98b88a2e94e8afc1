// Sparse x dense matrix product C = A * B (SpMM, as in a GNN layer's neighbour
// aggregation): A is 2^17 x 2^17 in CSR with 8 to 64 nonzeros per row (36 on
// average, uniform random columns), B is dense row-major with 32 floats per row
// (16 MB), C is 2^17 x 32. One thread per row of A, as a first port of the CPU
// loop: it walks the row's nonzeros and, for each, the 32 floats of B's row
// col[j] into 32 register accumulators, then writes its row of C.
// Performance problem: at every step the 32 lanes of a warp read 32 unrelated
// rows of B, so each of the 32 loads per nonzero touches 32 lines (one per
// lane); col/val and the stores of C are a row apart across the lanes too. Rows
// differ in length, so a warp runs as long as its longest row.
//
// Variant warp_per_row: one warp per row of A, lane l computes column l of C
// (kCols = 32): every load of B's row is one line per warp, col/val one address
// per warp (a broadcast), the store of C one line; 32x the threads in the launch.
#include "../../common/harness.cuh"

constexpr int kCols = 32;

__global__ void spmm_csr(float* C, const int* row_ptr, const int* col, const float* val, const float* B, int rows) {
  const int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per row
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  float acc[kCols / 32];
  for (int c = 0; c < kCols / 32; ++c) acc[c] = 0.f;
  for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
    const float a = val[j];
    const float* b = B + size_t(col[j]) * kCols;
    for (int c = 0; c < kCols / 32; ++c) acc[c] += a * b[lane + 32 * c];
  }
  for (int c = 0; c < kCols / 32; ++c) C[size_t(r) * kCols + lane + 32 * c] = acc[c];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 1 << 17, brows = 1 << 17;
  gpa::Lcg rng(47);
  std::vector<int> row_ptr(rows + 1, 0);
  for (int r = 0; r < rows; ++r) row_ptr[r + 1] = row_ptr[r] + 8 + int(rng.next() % 57);
  const int nnz = row_ptr[rows];
  std::vector<int> col(nnz);
  std::vector<float> val(nnz);
  for (int j = 0; j < nnz; ++j) {
    col[j] = int(rng.next() % brows);
    val[j] = rng.uniform(-1.f, 1.f);
  }
  std::vector<float> B(size_t(brows) * kCols);
  for (auto& v : B) v = rng.uniform(-1.f, 1.f);
  int* drow = gpa::to_device(row_ptr);
  int* dcol = gpa::to_device(col);
  float* dval = gpa::to_device(val);
  float* dB = gpa::to_device(B);
  float* dC = gpa::device_alloc<float>(size_t(rows) * kCols);
  const int block = 256, grid = (rows * 32 + block - 1) / block;  // a warp per row
  auto launch = [&] { spmm_csr<<<grid, block>>>(dC, drow, dcol, dval, dB, rows); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every element of C (row e / 32, column e % 32)
  std::vector<float> got = gpa::to_host(dC, size_t(rows) * kCols);
  auto ref = [&](size_t e) {
    const size_t r = e / kCols, c = e % kCols;
    double s = 0.0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) s += double(val[j]) * B[size_t(col[j]) * kCols + c];
    return s;
  };
  gpa::check_close(got, ref, size_t(rows) * kCols, 1e-5, 1e-4, "C");

  gpa::time_kernel("spmm_csr", opt, launch);
  return 0;
}
