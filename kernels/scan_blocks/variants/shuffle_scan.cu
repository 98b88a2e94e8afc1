// Per-block inclusive scan (prefix sum) of 1024-float segments in shared
// memory, work-efficient (Blelloch): an up-sweep builds partial sums in a
// tree, a down-sweep turns them into the exclusive scan, and each element is
// added back for the inclusive result. 512 threads per block, two elements each.
// Performance problem: the tree steps address buf[offset * (2 * tid + 1) - 1],
// a stride of 2 * offset words: 2-way bank conflicts at the first level, 4-,
// 8-, 16-, 32-way at the next ones, on every shared load and store of both
// sweeps. Each level of the tree costs about as many shared wavefronts as the
// first, instead of halving.
#include "../../common/harness.cuh"

constexpr int kThreads = 512;
constexpr int kElems = 2 * kThreads;

__global__ void scan_blocks(const float* in, float* out) {
  // warp shuffles instead of the shared-memory tree: each warp scans its 32
  // elements of each half in registers, the 32 warp totals meet in shared
  // memory and one warp scans them: 2 barriers instead of 21
  constexpr int kWarps = kThreads / 32;
  __shared__ float sums[2 * kWarps];  // inclusive totals of the 32-element chunks, in order
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const size_t base = size_t(blockIdx.x) * kElems;
  float a = in[base + tid], b = in[base + tid + kThreads];
  for (int o = 1; o < 32; o *= 2) {  // inclusive warp scans of chunk warp and chunk kWarps + warp
    const float ua = __shfl_up_sync(0xffffffffu, a, o), ub = __shfl_up_sync(0xffffffffu, b, o);
    if (lane >= o) {
      a += ua;
      b += ub;
    }
  }
  if (lane == 31) {
    sums[warp] = a;
    sums[kWarps + warp] = b;
  }
  __syncthreads();
  if (warp == 0) {  // inclusive scan of the 2 * kWarps = 32 chunk totals
    float s = sums[lane];
    for (int o = 1; o < 32; o *= 2) {
      const float u = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += u;
    }
    sums[lane] = s;
  }
  __syncthreads();
  out[base + tid] = a + (warp > 0 ? sums[warp - 1] : 0.f);
  out[base + tid + kThreads] = b + sums[kWarps + warp - 1];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 25;
  const int blocks = n / kElems;
  // small integers: every order of addition gives the exact prefix sums
  std::vector<float> x(n);
  gpa::Lcg rng(37);
  for (auto& v : x) v = float(rng.next() % 16);
  float* din = gpa::to_device(x);
  float* dout = gpa::device_alloc<float>(n);
  auto launch = [&] { scan_blocks<<<blocks, kThreads>>>(din, dout); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dout, n);
  std::vector<double> want(n);
  for (size_t i = 0; i < size_t(n); ++i) want[i] = x[i] + (i % kElems ? want[i - 1] : 0.0);
  gpa::check_close(got, [&](size_t i) { return want[i]; }, n, 0.0, 0.0, "segment prefix sums");

  gpa::time_kernel("scan_blocks", opt, launch);
  return 0;
}
