// ICP-style accumulation (seed 000): each point yields a row of 7 values and
// every thread sums the 27 products row[i] * row[j] over its points.
// `dims` is a runtime argument, so the loops over row[] cannot be unrolled and
// row[] and acc[] are indexed dynamically: they live in local memory (LDL/STL).
#include "../../common/harness.cuh"

constexpr int kDims = 7;
constexpr int kSums = 27;

__global__ void icp_accumulate(const float4* __restrict__ pts, const float4* __restrict__ nrm,
                               float* __restrict__ out, int npts, int dims) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int nthreads = gridDim.x * blockDim.x;
  float row[kDims];
  float acc[kSums];
  for (int k = 0; k < kSums; ++k) acc[k] = 0.f;
  for (int p = tid; p < npts; p += nthreads) {
    float4 s = pts[p], n = nrm[p];
    row[0] = n.x;
    row[1] = n.y;
    row[2] = n.z;
    row[3] = s.y * n.z - s.z * n.y;
    row[4] = s.z * n.x - s.x * n.z;
    row[5] = s.x * n.y - s.y * n.x;
    row[6] = n.w - (s.x * n.x + s.y * n.y + s.z * n.z);
    int shift = 0;
    #pragma unroll 4
    for (int i = 0; i < dims - 1; ++i)
      for (int j = i; j < dims; ++j)
        acc[shift++] += row[i] * row[j];
  }
  for (int k = 0; k < kSums; ++k) out[k * nthreads + tid] = acc[k];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int npts = 1 << 24;
  const int block = 256, grid = 132 * 8;
  const int nthreads = block * grid;
  std::vector<float4> hp(npts), hn(npts);
  gpa::Lcg rng(7);
  for (int i = 0; i < npts; ++i) {
    hp[i] = make_float4(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), 1.f);
    hn[i] = make_float4(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-0.1f, 0.1f));
  }
  float4* dp = gpa::to_device(hp);
  float4* dn = gpa::to_device(hn);
  float* dout = gpa::device_alloc<float>(size_t(kSums) * nthreads);
  auto launch = [&] { icp_accumulate<<<grid, block>>>(dp, dn, dout, npts, kDims); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> h = gpa::to_host(dout, size_t(kSums) * nthreads);
  std::vector<double> want(kSums, 0.0), got(kSums, 0.0);
  for (int p = 0; p < npts; ++p) {
    const float4 s = hp[p], n = hn[p];
    double r[kDims] = {n.x, n.y, n.z, s.y * n.z - s.z * n.y, s.z * n.x - s.x * n.z,
                       s.x * n.y - s.y * n.x, n.w - (s.x * n.x + s.y * n.y + s.z * n.z)};
    int k = 0;
    for (int i = 0; i < kDims - 1; ++i)
      for (int j = i; j < kDims; ++j) want[k++] += r[i] * r[j];
  }
  for (int k = 0; k < kSums; ++k)
    for (int t = 0; t < nthreads; ++t) got[k] += h[size_t(k) * nthreads + t];
  gpa::check_close(got, [&](size_t k) { return want[k]; }, kSums, 1e-3, 1e-1, "icp sums");

  gpa::time_kernel("icp_accumulate", opt, launch);
  return 0;
}
