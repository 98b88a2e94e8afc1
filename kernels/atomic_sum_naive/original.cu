// Sum and sum of squares of 2^22 floats (the statistics of a mean and a
// variance), written as a direct port of the CPU loop: a grid-stride loop in
// which every thread adds each of its elements to the two totals in global
// memory with atomicAdd (1024 blocks of 256 threads, 16 elements per thread).
// Performance problem: 2^23 float atomics (RED.ADD.F32) on two adjacent
// addresses of one 32-byte sector: one L2 slice does every add, one after the
// other, so the loop is bound by that slice's atomic throughput, not by the
// 16 MB it reads. (2^22 elements, not 2^26: at the H100's 1.4 atomics per ns on
// one counter, benchmarks/atomics, 2^27 atomics would take ~100 ms a launch.)
#include "../common/harness.cuh"

__global__ void stats_atomic(const float* x, float* total, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    atomicAdd(&total[0], v);
    atomicAdd(&total[1], v * v);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 22;
  std::vector<float> x(n);
  gpa::Lcg rng(53);
  for (auto& v : x) v = rng.uniform(0.5f, 1.5f);
  float* dx = gpa::to_device(x);
  float* dtotal = gpa::device_alloc<float>(2);
  const int block = 256, grid = 1024;
  // the totals accumulate over the timed launches; only the first one is checked
  auto launch = [&] { stats_atomic<<<grid, block>>>(dx, dtotal, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // against double sums: float atomics add in a run-dependent order, each add
  // rounded at the totals' magnitude (~2^22; values in [0.5, 1.5) keep the
  // rounding of v * v unbiased: ~1e-4 of drift by a float32 simulation), so a relative 1e-3
  std::vector<float> got = gpa::to_host(dtotal, 2);
  double sum = 0.0, sum_sq = 0.0;
  for (float v : x) sum += v, sum_sq += double(v) * v;
  gpa::check_close(got, [&](size_t k) { return k == 0 ? sum : sum_sq; }, 2, 1e-3, 0.0, "sum and sum of squares");

  gpa::time_kernel("stats_atomic", opt, launch);
  return 0;
}
