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
  __shared__ float buf[kElems];
  const int tid = threadIdx.x;
  const size_t base = size_t(blockIdx.x) * kElems;
  const float2 ab = reinterpret_cast<const float2*>(in + base)[tid];
  buf[2 * tid] = ab.x;
  buf[2 * tid + 1] = ab.y;
  int offset = 1;
  for (int d = kElems / 2; d > 0; d /= 2) {  // up-sweep: sums of 2, 4, 8... elements
    __syncthreads();
    if (tid < d) {
      const int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      buf[bi] += buf[ai];
    }
    offset *= 2;
  }
  if (tid == 0) buf[kElems - 1] = 0.f;
  for (int d = 1; d < kElems; d *= 2) {  // down-sweep: exclusive prefix sums
    offset /= 2;
    __syncthreads();
    if (tid < d) {
      const int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      const float t = buf[ai];
      buf[ai] = buf[bi];
      buf[bi] += t;
    }
  }
  __syncthreads();
  reinterpret_cast<float2*>(out + base)[tid] = make_float2(buf[2 * tid] + ab.x, buf[2 * tid + 1] + ab.y);
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
