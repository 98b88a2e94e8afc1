// Group-by sum over unsorted, skewed keys (SELECT key, SUM(val) GROUP BY key as a GPU database's
// hash-free aggregation into a dense key domain; a sparse gradient's per-id accumulation):
// out[key[i]] += val[i] for 2^22 (key, value) pairs into 2^18 groups (out: 1 MB, fits in the L2).
// The keys are Zipf(1.1) over the groups and scattered over the key domain by a fixed random
// permutation (not frequency-sorted, not sorted by key): the hottest key takes ~13% of the pairs,
// the next ~6%, and ~30 k keys a few pairs each. Written as a first port does: a grid-stride loop
// (one full wave of 256-thread blocks), one float atomicAdd (a RED) per pair.
// Performance problem: every warp's 32 keys are drawn afresh, so ~4 lanes of nearly every warp RED
// name the hottest key: ~550 k adds to one 4-byte word, which its L2 slice applies one after
// another, while the other ~3.6 M adds spread over thousands of lines.
#include "../common/harness.cuh"

// one thread per pair; n % 32 == 0, so a warp's lanes enter and leave the loop together
__global__ void groupby_sum(const int* key, const float* val, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&out[key[i]], val[i]);
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 22, m = 1 << 18;
  gpa::Lcg rng(2027);
  // the key of frequency rank r is perm[r]: a fixed random permutation of the key domain
  std::vector<int> perm(m);
  for (int r = 0; r < m; ++r) perm[r] = r;
  for (int r = m - 1; r > 0; --r) std::swap(perm[r], perm[rng.next() % unsigned(r + 1)]);
  // Zipf(1.1) ranks by inverse CDF: P(rank = r) ~ (r + 1)^-1.1
  std::vector<double> cdf(m);
  double acc = 0.0;
  for (int r = 0; r < m; ++r) cdf[r] = (acc += std::pow(r + 1.0, -1.1));
  std::vector<int> key(n);
  for (auto& k : key) {
    const double u = (rng.next() + 0.5) / 2147483648.0 * acc;
    k = perm[std::min(m - 1, int(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()))];
  }
  // values 1..4 (integers in floats): every partial sum of a group is an integer below 2^24 (the
  // hottest group's whole sum is ~1.4 M), so the float sums are exact in any order of the adds
  std::vector<float> val(n);
  for (auto& v : val) v = float(1 + ((rng.next() >> 8) & 3));

  int* dkey = gpa::to_device(key);
  float* dval = gpa::to_device(val);
  float* dout = gpa::device_alloc<float>(m);
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int block = 256, grid = sms * 8;     // one full wave: 2048 threads per SM
  // out += the sums: the first launch (on out = 0) is checked, the timed ones keep adding
  auto launch = [&] { groupby_sum<<<grid, block>>>(dkey, dval, dout, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<double> want(m, 0.0);
  for (int i = 0; i < n; ++i) want[key[i]] += val[i];
  std::vector<float> got = gpa::to_host(dout, m);
  // exact by construction (integer sums below 2^24): no tolerance
  gpa::check_close(got, [&](size_t k) { return want[k]; }, size_t(m), 0.0, 0.0, "group sums (every key)");

  gpa::time_kernel("groupby_sum", opt, launch);
  return 0;
}
