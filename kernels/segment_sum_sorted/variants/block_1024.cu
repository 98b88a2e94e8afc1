// Segment sum over sorted segment ids (tf.math.segment_sum, PyG's global_add_pool over a batch of
// graphs): the 128-float feature rows of 2^18 nodes summed into the row of their graph,
// out[seg[r], :] += x[r, :]. The ids are sorted (a batch's nodes grouped by graph) and the graph
// sizes heavy-tailed: the graph of rank k gets a (k + 1)^-1.5 share of the nodes, so the largest
// holds ~38% of them and the four largest ~2/3. Written as a first port does: a grid-stride loop,
// one thread per element, one float atomicAdd (a RED) per element.
// Performance problem: sorted ids put every warp in flight on the same few destination lines:
// while the loop walks a large graph's nodes, all its REDs go to that graph's 512-byte row (4
// lines), whose L2 slices perform the adds to one line one after another. Reading x (128 MB) from
// DRAM is a small part of the time.
#include "../../common/harness.cuh"

constexpr int kD = 128;  // features per row

__global__ void segment_sum(const float* x, const int* seg, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int row = i / kD, col = i % kD;
    atomicAdd(&out[seg[row] * kD + col], x[i]);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n_rows = 1 << 18, n_seg = 16384, n = n_rows * kD;
  // heavy-tailed segment lengths: segment s has rank[s] in a fixed random ranking and gets one row
  // plus a (rank + 1)^-1.5 share of the others, rounded down; what the rounding leaves goes to rank 0
  gpa::Lcg rng(1729);
  std::vector<int> rank(n_seg);
  for (int s = 0; s < n_seg; ++s) rank[s] = s;
  for (int s = n_seg - 1; s > 0; --s) std::swap(rank[s], rank[rng.next() % unsigned(s + 1)]);
  std::vector<double> share(n_seg);
  double total = 0.0;
  for (int s = 0; s < n_seg; ++s) total += share[s] = std::pow(rank[s] + 1.0, -1.5);
  std::vector<int> len(n_seg);
  int used = 0, top = 0;
  for (int s = 0; s < n_seg; ++s) {
    len[s] = 1 + int((n_rows - n_seg) * share[s] / total);
    used += len[s];
    if (rank[s] == 0) top = s;
  }
  len[top] += n_rows - used;
  std::vector<int> seg;                      // sorted: len[s] copies of s, s = 0, 1, ...
  seg.reserve(n_rows);
  for (int s = 0; s < n_seg; ++s) seg.insert(seg.end(), len[s], s);
  std::vector<float> x(size_t(n_rows) * kD);
  for (auto& v : x) v = rng.uniform(0.f, 1.f);
  float* dx = gpa::to_device(x);
  int* dseg = gpa::to_device(seg);
  float* dout = gpa::device_alloc<float>(size_t(n_seg) * kD);
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int block = 1024, grid = sms * 2;    // one full wave: 2048 threads per SM
  // the sums accumulate over the timed launches; only the first one is checked
  auto launch = [&] { segment_sum<<<grid, block>>>(dx, dseg, dout, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every output element against a double sum of its segment's rows
  std::vector<float> got = gpa::to_host(dout, size_t(n_seg) * kD);
  std::vector<double> want(size_t(n_seg) * kD, 0.0);
  for (size_t r = 0; r < size_t(n_rows); ++r)
    for (int c = 0; c < kD; ++c) want[size_t(seg[r]) * kD + c] += x[r * kD + c];
  gpa::check_close(got, [&](size_t i) { return want[i]; }, got.size(), 2e-4, 1e-4, "segment sums");

  gpa::time_kernel("segment_sum", opt, launch);
  return 0;
}
