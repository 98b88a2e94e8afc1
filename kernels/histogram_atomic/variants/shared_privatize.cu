// 256-bin histogram of a byte stream: a grid-stride loop in which every thread
// adds each of its bytes to the bin in global memory with atomicAdd.
// Performance problem: 2^24 global atomics on the same 256 counters -- 1 KB,
// eight 128-byte lines, so a handful of L2 slices do all the work. The atomics
// (RED) queue in the memory system: the loop is bound by the L2's atomic
// throughput on those lines, not by the 16 MB it reads.
#include "../../common/harness.cuh"

constexpr int kBins = 256;

__global__ void histogram_global(const unsigned char* data, unsigned* hist, int n) {
  __shared__ unsigned local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24;
  std::vector<unsigned char> bytes(n);
  gpa::Lcg rng(101);
  for (auto& v : bytes) v = static_cast<unsigned char>(rng.next() & 0xFF);
  unsigned char* ddata = gpa::to_device(bytes);
  unsigned* dhist = gpa::device_alloc<unsigned>(kBins);
  const int block = 256, grid = 2048;
  // the counts accumulate over the timed launches; only the first one is checked
  auto launch = [&] { histogram_global<<<grid, block>>>(ddata, dhist, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<unsigned> got = gpa::to_host(dhist, kBins);
  std::vector<double> want(kBins, 0.0);
  for (unsigned char v : bytes) want[v] += 1.0;
  gpa::check_close(got, [&](size_t b) { return want[b]; }, kBins, 0.0, 0.0, "bin counts");

  gpa::time_kernel("histogram_global", opt, launch);
  return 0;
}
