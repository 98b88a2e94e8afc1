// ICP-style block reductions (seed 000): each thread builds a row of 7 values
// from its point, and the block reduces all 27 products row[i] * row[j] with a
// shared-memory tree: 8 __syncthreads() per product, 27 products per block.
// Warps spend their time waiting at the barriers (synchronization stalls).
#include "../../common/harness.cuh"

constexpr int kBlock = 256;
constexpr int kDims = 7;
constexpr int kSums = 27;

__global__ void icp_reduce(const float4* __restrict__ pts, const float4* __restrict__ nrm,
                           float* __restrict__ partial, int npts) {
  __shared__ float smem[kBlock];
  const int tid = threadIdx.x;
  const int p = blockIdx.x * kBlock + tid;
  float row[kDims] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (p < npts) {
    float4 s = pts[p], n = nrm[p];
    row[0] = n.x; row[1] = n.y; row[2] = n.z;
    row[3] = s.y * n.z - s.z * n.y;
    row[4] = s.z * n.x - s.x * n.z;
    row[5] = s.x * n.y - s.y * n.x;
    row[6] = n.w - (s.x * n.x + s.y * n.y + s.z * n.z);
  }
  float prod[kSums];  // all 27 products computed before the first barrier
  int shift = 0;
#pragma unroll
  for (int i = 0; i < kDims - 1; ++i)
#pragma unroll
    for (int j = i; j < kDims; ++j) prod[shift++] = row[i] * row[j];
  shift = 0;
#pragma unroll
  for (int i = 0; i < kDims - 1; ++i) {
#pragma unroll
    for (int j = i; j < kDims; ++j) {
      smem[tid] = prod[shift];
      __syncthreads();
      for (int s = kBlock / 2; s > 0; s >>= 1) {
        if (tid < s) smem[tid] += smem[tid + s];
        __syncthreads();
      }
      if (tid == 0) partial[shift * gridDim.x + blockIdx.x] = smem[0];
      ++shift;
      __syncthreads();
    }
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int npts = 1 << 23;
  const int grid = npts / kBlock;
  std::vector<float4> hp(npts), hn(npts);
  gpa::Lcg rng(11);
  for (int i = 0; i < npts; ++i) {
    hp[i] = make_float4(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), 1.f);
    hn[i] = make_float4(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-0.1f, 0.1f));
  }
  float4* dp = gpa::to_device(hp);
  float4* dn = gpa::to_device(hn);
  float* dpart = gpa::device_alloc<float>(size_t(kSums) * grid);
  auto launch = [&] { icp_reduce<<<grid, kBlock>>>(dp, dn, dpart, npts); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h = gpa::to_host(dpart, size_t(kSums) * grid);
  std::vector<double> want(size_t(kSums) * grid, 0.0);
  for (int p = 0; p < npts; ++p) {
    const float4 s = hp[p], n = hn[p];
    double r[kDims] = {n.x, n.y, n.z, s.y * n.z - s.z * n.y, s.z * n.x - s.x * n.z,
                       s.x * n.y - s.y * n.x, n.w - (s.x * n.x + s.y * n.y + s.z * n.z)};
    int k = 0;
    for (int i = 0; i < kDims - 1; ++i)
      for (int j = i; j < kDims; ++j) want[size_t(k++) * grid + p / kBlock] += r[i] * r[j];
  }
  gpa::check_close(h, [&](size_t i) { return want[i]; }, want.size(), 1e-3, 1e-3, "block sums");

  gpa::time_kernel("icp_reduce", opt, launch);
  return 0;
}
