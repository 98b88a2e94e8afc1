// Sparse matrix-vector product y = A x, A in CSR, one thread per row (the
// "scalar" CSR kernel). 2^20 rows of 4 to 60 nonzeros (32 on average), columns
// within +-2048 of the diagonal.
// Performance problem: each thread walks its own row, so at every step the 32
// lanes of a warp read val[] and col[] at 32 unrelated places (a row apart):
// 32 sectors per load instead of 4, served from L1/L2 line by line; and a warp
// runs as long as its longest row while the lanes of shorter rows idle.
#include <cstring>
#include "../../common/harness.cuh"

// Variant packed (memory_transaction_reduction): each nonzero's column and value
// stored together as one 8-byte record (int2: .x the column, .y the value's bits),
// built on the host outside the timed launches: one LDG.64 per step instead of
// two LDG.32 from two arrays.
__global__ void spmv_csr(int rows, const int* row_ptr, const int2* colval, const float* x, float* y) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float sum = 0.f;
  for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
    const int2 e = colval[j];
    sum += __int_as_float(e.y) * x[e.x];
  }
  y[r] = sum;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 1 << 20, band = 2048;
  gpa::Lcg rng(23);
  std::vector<int> row_ptr(rows + 1, 0);
  for (int r = 0; r < rows; ++r) row_ptr[r + 1] = row_ptr[r] + 4 + int(rng.next() % 57);
  const int nnz = row_ptr[rows];
  std::vector<int> col(nnz);
  std::vector<float> val(nnz), x(rows);
  for (int r = 0; r < rows; ++r)
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      col[j] = (r + int(rng.next() % (2 * band + 1)) - band + rows) % rows;
      val[j] = rng.uniform(-1.f, 1.f);
    }
  for (auto& v : x) v = rng.uniform(-1.f, 1.f);
  int* drow = gpa::to_device(row_ptr);
  std::vector<int2> colval(nnz);
  for (int j = 0; j < nnz; ++j) {
    int bits;
    std::memcpy(&bits, &val[j], sizeof bits);
    colval[j] = make_int2(col[j], bits);
  }
  int2* dcolval = gpa::to_device(colval);
  float* dx = gpa::to_device(x);
  float* dy = gpa::device_alloc<float>(rows);
  const int block = 256, grid = (rows + block - 1) / block;
  auto launch = [&] { spmv_csr<<<grid, block>>>(rows, drow, dcolval, dx, dy); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dy, rows);
  auto ref = [&](size_t r) {
    double s = 0.0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) s += double(val[j]) * x[col[j]];
    return s;
  };
  gpa::check_close(got, ref, rows, 1e-4, 1e-5, "y (every 3rd row)", 3);

  gpa::time_kernel("spmv_csr", opt, launch);
  return 0;
}
