// Sparse matrix-vector product y = A x, A in CSR, one thread per row (the
// "scalar" CSR kernel). 2^20 rows of 4 to 60 nonzeros (32 on average), columns
// within +-2048 of the diagonal.
// Performance problem: each thread walks its own row, so at every step the 32
// lanes of a warp read val[] and col[] at 32 unrelated places (a row apart):
// 32 sectors per load instead of 4, served from L1/L2 line by line; and a warp
// runs as long as its longest row while the lanes of shorter rows idle.
#include "../../common/harness.cuh"

__global__ void spmv_csr(int rows, const int* row_ptr, const int* col, const float* val, const float* x, float* y) {
  const int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;  // one warp per row
  if (r >= rows) return;
  float sum = 0.f;
  for (int j = row_ptr[r] + lane; j < row_ptr[r + 1]; j += 32) sum += val[j] * x[col[j]];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
  if (lane == 0) y[r] = sum;
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
  int* dcol = gpa::to_device(col);
  float* dval = gpa::to_device(val);
  float* dx = gpa::to_device(x);
  float* dy = gpa::device_alloc<float>(rows);
  const int block = 256, grid = (rows * 32 + block - 1) / block;
  auto launch = [&] { spmv_csr<<<grid, block>>>(rows, drow, dcol, dval, dx, dy); };
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
