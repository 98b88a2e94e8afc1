// Block-wise sum in shared memory, the classic first version: each block of
// 256 threads loads 256 floats and halves them in a tree with interleaved
// addressing -- in step s the threads whose index is a multiple of 2*s add
// the element s further on -- and writes one partial sum per block.
// Performance problem: the test `tid % (2 * s) == 0` is a modulo by a run-time
// divisor, a ~19-instruction integer division (I2F.RP, MUFU.RCP, IMAD.HI...)
// that every thread executes in every step around a 4-instruction add; and
// most lanes of every warp sit masked off (1/2, 1/4, ... active: divergence).
#include "../common/harness.cuh"

constexpr int kBlock = 256;

__global__ void reduce_interleaved(const float* in, float* partial, int n) {
  __shared__ float buf[kBlock];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[tid] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = buf[0];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 26;
  const int blocks = n / kBlock;
  // small integers: every order of addition gives the exact sum
  std::vector<float> x(n);
  gpa::Lcg rng(5);
  for (auto& v : x) v = float(int(rng.next() % 17) - 8);
  float* din = gpa::to_device(x);
  float* dpartial = gpa::device_alloc<float>(blocks);
  auto launch = [&] { reduce_interleaved<<<blocks, kBlock>>>(din, dpartial, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dpartial, blocks);
  auto ref = [&](size_t b) {
    double s = 0.0;
    for (int t = 0; t < kBlock; ++t) s += x[b * kBlock + t];
    return s;
  };
  gpa::check_close(got, ref, got.size(), 0.0, 0.0, "partial sums");

  gpa::time_kernel("reduce_interleaved", opt, launch);
  return 0;
}
