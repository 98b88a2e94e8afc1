// Sparse matrix-vector product y = A x, A in CSR, one thread per row (the
// "scalar" CSR kernel). 2^20 rows of 4 to 60 nonzeros (32 on average), columns
// within +-2048 of the diagonal.
// Performance problem: each thread walks its own row, so at every step the 32
// lanes of a warp read val[] and col[] at 32 unrelated places (a row apart):
// 32 sectors per load instead of 4, served from L1/L2 line by line; and a warp
// runs as long as its longest row while the lanes of shorter rows idle.
#include "../../common/harness.cuh"

// The change: the same thread per row, the same loop, with the rows of each 32-row slice stored
// interleaved (sliced ELL, SELL-32): element k of row r sits at slice_ptr[r / 32] + 32 k + r % 32, so
// at every step the lanes of a warp read 32 consecutive elements. Each slice is padded to its longest
// row; a thread reads only its own row's n elements (the padding is never read).
__global__ void spmv_csr(int rows, const int* row_ptr, const int* slice_ptr, const int* col, const float* val,
                         const float* x, float* y) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int n = row_ptr[r + 1] - row_ptr[r];
  const int base = slice_ptr[r / 32] + r % 32;
  float sum = 0.f;
  for (int k = 0; k < n; ++k) sum += val[base + 32 * k] * x[col[base + 32 * k]];
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
  // the same matrix in SELL-32 (built once, outside the timed launches)
  const int slices = (rows + 31) / 32;
  std::vector<int> slice_ptr(slices + 1, 0);
  for (int s = 0; s < slices; ++s) {
    int len = 0;
    for (int r = 32 * s; r < std::min(rows, 32 * s + 32); ++r) len = std::max(len, row_ptr[r + 1] - row_ptr[r]);
    slice_ptr[s + 1] = slice_ptr[s] + 32 * len;
  }
  std::vector<int> scol(slice_ptr[slices], 0);
  std::vector<float> sval(slice_ptr[slices], 0.f);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < row_ptr[r + 1] - row_ptr[r]; ++k) {
      scol[slice_ptr[r / 32] + 32 * k + r % 32] = col[row_ptr[r] + k];
      sval[slice_ptr[r / 32] + 32 * k + r % 32] = val[row_ptr[r] + k];
    }
  int* drow = gpa::to_device(row_ptr);
  int* dslice = gpa::to_device(slice_ptr);
  int* dcol = gpa::to_device(scol);
  float* dval = gpa::to_device(sval);
  float* dx = gpa::to_device(x);
  float* dy = gpa::device_alloc<float>(rows);
  const int block = 256, grid = (rows + block - 1) / block;
  auto launch = [&] { spmv_csr<<<grid, block>>>(rows, drow, dslice, dcol, dval, dx, dy); };
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
