// Scatter-add of rows (torch.index_add_ / scatter_add_ along dim 0): dst[index[i], :] += src[i, :]
// for N = 2^20 source rows of D = 64 floats into a 32768 x 64 destination (8 MB), as the
// backward pass of an embedding lookup writes its gradient table: index = token ids of a
// frequency-sorted vocabulary, Zipf(1) distributed (id 0 takes ~9% of the rows, ids < 32 ~37%).
// Written the way a first port is (PyTorch's indexFuncLargeIndex shape): a grid-stride loop
// over the N x D source elements, one float atomicAdd each, source row and column by division
// by the run-time D. Performance problem: the lanes of a warp add to 32 consecutive floats of
// one destination row (no conflict inside the instruction), but ~95 k warps add to each line
// of row 0 and ~48 k to row 1's: the L2 slice holding a hot line applies them one after another.
#include "../common/harness.cuh"

__global__ void scatter_add_rows(float* dst, const int* index, const float* src, int n, int d) {
  const int total = n * d;
  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
    const int i = t / d;
    const int j = t - i * d;
    atomicAdd(&dst[index[i] * d + j], src[t]);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 20, d = 64, m = 32768;
  gpa::Lcg rng(131);
  // Zipf(1) over the ids 0..m-1 by inverse CDF: P(id = r) ~ 1 / (r + 1)
  std::vector<double> cdf(m);
  double acc = 0.0;
  for (int r = 0; r < m; ++r) cdf[r] = (acc += 1.0 / (r + 1));
  std::vector<int> index(n);
  for (auto& r : index) {
    const double u = (rng.next() + 0.5) / 2147483648.0 * acc;
    r = std::min(m - 1, int(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()));
  }
  // values k / 16 (k in -16..15): every partial sum of an element is a multiple of 1/16 below
  // 2^17 in magnitude (at most ~10^5 terms of at most 1), 21 bits: float sums exact in any order
  std::vector<float> src(size_t(n) * d);
  for (size_t k = 0; k < src.size(); k += 4) {  // four 5-bit values per draw
    const unsigned x = rng.next();
    for (int q = 0; q < 4; ++q) src[k + q] = float(int((x >> (5 * q)) & 31) - 16) / 16.0f;
  }

  int* dindex = gpa::to_device(index);
  float* dsrc = gpa::to_device(src);
  float* ddst = gpa::device_alloc<float>(size_t(m) * d);
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int block = 256;
  const int grid = sms * (2048 / block);  // one full wave: 2048 threads per SM
  // dst += scatter: the first launch (on dst = 0) is checked, the timed ones keep adding
  auto launch = [&] { scatter_add_rows<<<grid, block>>>(ddst, dindex, dsrc, n, d); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<double> want(size_t(m) * d, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) want[size_t(index[i]) * d + j] += src[size_t(i) * d + j];
  std::vector<float> got = gpa::to_host(ddst, size_t(m) * d);
  // exact by construction (see the values above); the tolerance only names float reassociation
  gpa::check_close(got, [&](size_t k) { return want[k]; }, size_t(m) * d, 1e-6, 1e-6, "dst (every element)");

  gpa::time_kernel("scatter_add_rows", opt, launch);
  return 0;
}
