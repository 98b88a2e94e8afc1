// Naive SGEMM, C = alpha * A * B + beta * C, all row-major, M = N = K = 512,
// one thread per element of C in 32 x 32 blocks, written the way SGEMM
// tutorials start: the row of C comes from threadIdx.x and the column from
// threadIdx.y. The 32 lanes of a warp share threadIdx.y, so they hold 32
// different rows of C and one column: at every step of the K loop the load of
// A[row * K + i] touches 32 lines K floats apart (32 sectors for 128 useful
// bytes), the load of B[i * N + col] is one address for the whole warp, and
// the read and write of C touch 32 lines. The lines of A come back from L1
// for the next 31 steps, so the cost is L1 work per request more than DRAM.
//
// Variant fast_math: the same source built with --use_fast_math (case.toml: flags).
#include "../../common/harness.cuh"

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                            float* C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.f;
    for (int i = 0; i < K; ++i) acc += A[row * K + i] * B[i * N + col];
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int M = 512, N = 512, K = 512;
  const float alpha = 1.5f, beta = 0.5f;
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
  gpa::Lcg rng(41);
  for (auto& v : a) v = rng.uniform(-1.f, 1.f);
  for (auto& v : b) v = rng.uniform(-1.f, 1.f);
  for (auto& v : c) v = rng.uniform(-1.f, 1.f);
  float* dA = gpa::to_device(a);
  float* dB = gpa::to_device(b);
  float* dC = gpa::to_device(c);
  const dim3 block(32, 32), grid((M + block.x - 1) / block.x, (N + block.y - 1) / block.y);
  auto launch = [&] { sgemm_naive<<<grid, block>>>(M, N, K, alpha, dA, dB, beta, dC); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every 7th element of C (C is updated in place: the
  // check reads the result of this first launch, before the timed ones)
  std::vector<float> got = gpa::to_host(dC, size_t(M) * N);
  auto ref = [&](size_t e) {
    const size_t r = e / N, q = e % N;
    double s = 0.0;
    for (int i = 0; i < K; ++i) s += double(a[r * K + i]) * b[size_t(i) * N + q];
    return alpha * s + beta * double(c[e]);
  };
  gpa::check_close(got, ref, size_t(M) * N, 1e-4, 1e-4, "C (every 7th element)", 7);

  gpa::time_kernel("sgemm_naive", opt, launch);
  return 0;
}
