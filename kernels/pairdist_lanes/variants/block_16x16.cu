// Pairwise squared Euclidean distances between two point sets, the first step of
// brute-force k-nearest-neighbour search, k-means assignment or an RBF kernel
// matrix: P holds n = 2048 query points of d = 256 features row-major (P[i*d+k],
// 2 MB), Q holds m = 1024 reference points column-major as a BLAS-style caller
// hands it over (Qc[k*m+j], feature k of point j; 1 MB), and
// out[i*m+j] = sum_k (P[i][k] - Q[j][k])^2 (n x m row-major, 8 MB).
// One thread per output in 32 x 8 blocks, as a first port writes it: i (the row
// of P) from the x dimension, j from the y dimension, a run-time d.
// Performance problem (prior): in every iteration of the k loop the 32 lanes of
// a warp read P at 32 different rows (32 different 128-byte lines, 4 useful
// bytes each) while all of them read the same Qc[k*m+j] (a broadcast); the 3 MB
// working set stays in the L1/L2, so the L1's one line per cycle is the bound.
//
// Variant block_16x16: 16 x 16 blocks instead of 32 x 8, the grid (n/16, m/16);
// i still from x, but a warp now holds 16 values of i and two of j, so each load
// of P touches 16 lines (each read by two lanes) instead of 32.
#include "../../common/harness.cuh"

__global__ void pairdist(float* out, const float* P, const float* Qc, int n, int m, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // query point (row of P)
  const int j = blockIdx.y * blockDim.y + threadIdx.y;  // reference point (column of Qc)
  if (i >= n || j >= m) return;
  float acc = 0.0f;
  for (int k = 0; k < d; ++k) {
    const float t = P[i * d + k] - Qc[k * m + j];
    acc += t * t;
  }
  out[i * m + j] = acc;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 2048, m = 1024, d = 256;
  gpa::Lcg rng(1313);
  std::vector<float> P(size_t(n) * d), Qc(size_t(d) * m);
  for (auto& v : P) v = rng.uniform(-1.f, 1.f);
  for (auto& v : Qc) v = rng.uniform(-1.f, 1.f);
  float* dP = gpa::to_device(P);
  float* dQc = gpa::to_device(Qc);
  float* dout = gpa::device_alloc<float>(size_t(n) * m);
  // 0xFF bytes everywhere: a NaN in every output, so a missed output fails the check
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * m * sizeof(float)));
  const dim3 block(16, 16), grid(n / 16, m / 16);
  auto launch = [&] { pairdist<<<grid, block>>>(dout, dP, dQc, n, m, d); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 13th output (161 k of 2 M, all rows and columns hit), in double
  std::vector<float> got = gpa::to_host(dout, size_t(n) * m);
  auto ref = [&](size_t e) {
    const size_t i = e / m, j = e % m;
    double acc = 0.0;
    for (int k = 0; k < d; ++k) {
      const double t = double(P[i * d + k]) - double(Qc[size_t(k) * m + j]);
      acc += t * t;
    }
    return acc;
  };
  gpa::check_close(got, ref, size_t(n) * m, 1e-4, 1e-3, "out", 13);

  gpa::time_kernel("pairdist", opt, launch);
  return 0;
}
