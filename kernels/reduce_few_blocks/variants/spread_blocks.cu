// Sum of 2^25 floats: a grid-stride loop accumulates per thread, warp shuffles
// and one shared-memory step give a block sum, one atomicAdd per block. It is
// launched with 32 blocks of 256 threads: a quarter of the H100's 132 SMs get a
// block, 100 stay idle, and the whole GPU keeps at most 8192 loads in flight,
// far too few to cover DRAM latency: the kernel is latency-bound at a small
// fraction of the memory bandwidth.
#include "../../common/harness.cuh"

__global__ void reduce_sum(float* total, const float* x, int n) {
  __shared__ float warp_sum[32];
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += x[i];
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sum[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < blockDim.x / 32 ? warp_sum[lane] : 0.f;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) atomicAdd(total, s);
  }
}

static const int kBlocks = 128, kThreads = 64;

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 25;
  std::vector<float> x(n);
  gpa::Lcg rng(103);
  for (auto& v : x) v = rng.uniform(0, 1);
  float* dx = gpa::to_device(x);
  float* dtotal = gpa::device_alloc<float>(1);
  auto launch = [&] {
    CUDA_CHECK(cudaMemsetAsync(dtotal, 0, sizeof(float)));  // every timed run sums from zero
    reduce_sum<<<kBlocks, kThreads>>>(dtotal, dx, n);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dtotal, 1);
  double want = 0.0;
  for (float v : x) want += v;
  gpa::check_close(got, [&](size_t) { return want; }, 1, 1e-5, 0.0, "sum");

  gpa::time_kernel("reduce_sum", opt, launch);
  return 0;
}
