// Batched row dot products: block `batch` owns a 64 x len matrix A_b (stored
// k-major, so a warp's loads are coalesced) and computes out[batch][j][i] =
// dot(row i of A_b, row j of B) for every row j of a shared matrix B (a warp-
// uniform load); len is a run-time argument. 396 problems on 132 blocks of 64
// threads, one block per SM (__launch_bounds__(64, 1)): operands hit in L1.
// With registers to spare, nvcc unrolls the run-time loop by 16 and issues all
// 32 loads first; what is left is the accumulator: one dependent chain of 16
// FFMAs (4 cycles each) per iteration, and with two warps per SM nothing else
// runs meanwhile. (With 4 or more warps per SM the L1 would be the limit, not
// the chain: two loads per FFMA.)
#include "../../common/harness.cuh"

constexpr int kRows = 64;  // rows of A per batch = threads per block

__global__ void __launch_bounds__(kRows, 1)
row_dot(float* out, const float* a, const float* b, int len, int nb, int nbatch) {
  const int i = threadIdx.x;
  for (int batch = blockIdx.x; batch < nbatch; batch += gridDim.x) {
    const float* ab = a + size_t(batch) * len * kRows;
    for (int j = 0; j < nb; ++j) {
      float acc = 0.f;
      for (int k = 0; k < len; ++k)
        acc += ab[k * kRows + i] * b[j * len + k];
      out[(size_t(batch) * nb + j) * kRows + i] = acc;
    }
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int len = 128, nb = 128, nbatch = 3 * 132;
  std::vector<float> a(size_t(nbatch) * len * kRows), b(size_t(nb) * len);
  gpa::Lcg rng(71);
  for (auto& v : a) v = rng.uniform(-1, 1);
  for (auto& v : b) v = rng.uniform(-1, 1);
  float* da = gpa::to_device(a);
  float* db = gpa::to_device(b);
  const size_t nout = size_t(nbatch) * nb * kRows;
  float* dout = gpa::device_alloc<float>(nout);
  const int grid = 132 * 16;  // a full wave: 132 SMs x 16 resident blocks (64 registers x 64 threads)
  auto launch = [&] { row_dot<<<grid, kRows>>>(dout, da, db, len, nb, nbatch); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, nout);
  auto ref = [&](size_t o) {
    const size_t i = o % kRows, j = (o / kRows) % nb, batch = o / (size_t(kRows) * nb);
    double s = 0.0;
    for (int k = 0; k < len; ++k) s += double(a[(batch * len + k) * kRows + i]) * b[j * len + k];
    return s;
  };
  gpa::check_close(got, ref, nout, 1e-4, 2e-4, "dot products (every 97th)", 97);

  gpa::time_kernel("row_dot", opt, launch);
  return 0;
}
