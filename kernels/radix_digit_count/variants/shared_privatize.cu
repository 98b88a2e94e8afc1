// Count phase of an LSD radix sort with 10-bit digits: how many of the 2^24 keys have each value
// of the digit (key >> shift) & 1023. A grid-stride loop in which every thread adds each of its
// keys' digit to a counter in global memory with atomicAdd.
// Performance problem: 2^24 global atomics on 1024 counters (4 KB, 32 L2 lines): every add is a
// read-modify-write at the L2 and adds to the same counter serialize there; the 64 MB of keys are
// a small part of the time.
#include "../../common/harness.cuh"

constexpr int kDigits = 1024;

__global__ void digit_count(const unsigned* keys, unsigned* count, int n, int shift) {
  __shared__ unsigned local[kDigits];
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x) local[d] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[(keys[i] >> shift) & (kDigits - 1)], 1u);
  __syncthreads();
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x)
    if (local[d]) atomicAdd(&count[d], local[d]);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24, shift = 10;
  std::vector<unsigned> keys(n);
  gpa::Lcg rng(77);
  for (auto& k : keys) k = rng.next();
  unsigned* dkeys = gpa::to_device(keys);
  unsigned* dcount = gpa::device_alloc<unsigned>(kDigits);
  CUDA_CHECK(cudaMemset(dcount, 0, sizeof(unsigned) * kDigits));
  const int block = 256, grid = 1024;
  // the counts accumulate over the timed launches; only the first one is checked
  auto launch = [&] { digit_count<<<grid, block>>>(dkeys, dcount, n, shift); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<unsigned> got = gpa::to_host(dcount, kDigits);
  std::vector<double> want(kDigits, 0.0);
  for (unsigned k : keys) want[(k >> shift) & (kDigits - 1)] += 1.0;
  gpa::check_close(got, [&](size_t d) { return want[d]; }, kDigits, 0.0, 0.0, "digit counts");

  gpa::time_kernel("digit_count", opt, launch);
  return 0;
}
