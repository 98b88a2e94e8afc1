// Sparse matrix-vector product y += A x with A in COO format (row, col, val
// arrays sorted by row, as a CSR matrix expanded or an edge list sorted by source
// is), 2^20 x 2^20 with ~25 M nonzeros: power-law row lengths (4 to 4096, mean
// ~24), half the nonzeros of a row near the diagonal (band of 64), half uniform.
// Written the way a first port is: one thread per nonzero, each adding its
// product to y[row] with a float atomicAdd (RED.E.ADD.F32). Performance problem:
// the rows are sorted, so the 32 lanes of a warp hold 1-3 rows and their 32
// atomics go to 1-3 addresses: ~25 M atomics, most of them on an address the same
// warp instruction also updates, serialized in the L2.
//
// Variant vec4_loads: Memory Transaction Reduction's "issue fewer, wider and coalesced
// accesses (float4 loads)": each thread takes 4 consecutive nonzeros and reads their
// row, col and val as one int4, int4 and float4 (LDG.E.128, 16-byte aligned: i0 is a
// multiple of 4 and cudaMalloc aligns to 256 bytes), grid / 4; the x gathers stay
// scalar and every nonzero keeps its own atomicAdd (merging a row's products would be
// atomic privatization: run4). A tail of nnz % 4 nonzeros is read element by element.
#include "../../common/harness.cuh"

__global__ void coo_spmv_atomic(float* y, const int* row, const int* col, const float* val, const float* x, int nnz) {
  const int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i0 >= nnz) return;
  if (i0 + 4 <= nnz) {
    const int4 r = *reinterpret_cast<const int4*>(row + i0);
    const int4 c = *reinterpret_cast<const int4*>(col + i0);
    const float4 v = *reinterpret_cast<const float4*>(val + i0);
    atomicAdd(&y[r.x], v.x * x[c.x]);
    atomicAdd(&y[r.y], v.y * x[c.y]);
    atomicAdd(&y[r.z], v.z * x[c.z]);
    atomicAdd(&y[r.w], v.w * x[c.w]);
  } else {
    for (int i = i0; i < nnz; ++i) atomicAdd(&y[row[i]], val[i] * x[col[i]]);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 20, band = 64, max_len = 4096;
  gpa::Lcg rng(97);
  // values k / 16 (k in -15..15, not 0) and x = m / 16 (m in 1..16): every product is a
  // multiple of 1/256 below 1 and every partial sum of a row (< 4096 terms) fits in 20
  // bits, so the float sums are exact in any order and the check can be exact
  std::vector<int> row, col;
  std::vector<float> val;
  row.reserve(26u << 20);
  col.reserve(26u << 20);
  val.reserve(26u << 20);
  std::vector<int> cols;
  for (int r = 0; r < n; ++r) {
    const double u = (rng.next() + 1.0) / 2147483649.0;
    const int len = std::min(max_len, 4 + int(8.0 * std::pow(u, -0.6)));
    cols.clear();
    for (int k = 0; k < len; ++k) {
      const bool near = rng.next() & 1;
      const int c = near ? std::min(n - 1, std::max(0, r - band + int(rng.next() % (2 * band + 1)))) : int(rng.next() % n);
      cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    for (int c : cols) {
      int k = int(rng.next() % 30) - 15;
      if (k >= 0) ++k;
      row.push_back(r);
      col.push_back(c);
      val.push_back(k / 16.0f);
    }
  }
  const int nnz = int(row.size());
  std::vector<float> xv(n);
  for (auto& v : xv) v = float(1 + rng.next() % 16) / 16.0f;

  int* drow = gpa::to_device(row);
  int* dcol = gpa::to_device(col);
  float* dval = gpa::to_device(val);
  float* dx = gpa::to_device(xv);
  float* dy = gpa::device_alloc<float>(n);
  const int block = 256;
  const int grid = (nnz + 4 * block - 1) / (4 * block);
  // y += A x: the first launch (on y = 0) is checked, the timed ones keep adding
  auto launch = [&] { coo_spmv_atomic<<<grid, block>>>(dy, drow, dcol, dval, dx, nnz); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every row, exactly (see the values above)
  std::vector<double> want(n, 0.0);
  for (int i = 0; i < nnz; ++i) want[row[i]] += double(val[i]) * xv[col[i]];
  std::vector<float> got = gpa::to_host(dy, n);
  gpa::check_close(got, [&](size_t r) { return want[r]; }, n, 0.0, 0.0, "y (every row)");

  gpa::time_kernel("coo_spmv_atomic", opt, launch);
  return 0;
}
