// b+tree search (seed 004: Rodinia b+tree findK). Each block answers 64
// queries; for each it walks a 256-ary tree from the root. At each level every
// thread tests one key range of the current node; the thread whose range holds
// the query records the child in offset[]; after a barrier thread 0 publishes
// it in curr[], and after a second barrier every thread loads the next node's
// index from curr[] and uses it at once.
#include "../../common/harness.cuh"

constexpr int kOrder = 256;   // keys per node = threads per block
constexpr int kHeight = 3;    // levels: 256^3 keys
constexpr int kPerBlock = 64; // queries each block answers, one after the other

struct Node {
  int keys[kOrder + 1];       // keys[t] <= key < keys[t + 1] selects child[t]
  int child[kOrder + 1];
};

__global__ void find_k(const Node* __restrict__ nodes, const int* __restrict__ queries, int* __restrict__ curr,
                       int* __restrict__ offset, int* __restrict__ ans) {
  const int tid = threadIdx.x, bid = blockIdx.x;
  for (int qi = bid * kPerBlock; qi < (bid + 1) * kPerBlock; ++qi) {
    const int key = queries[qi];
    int cur = 0;  // the root
    for (int level = 0; level < kHeight; ++level) {
      const Node& n = nodes[cur];
      if (n.keys[tid] <= key && key < n.keys[tid + 1]) offset[bid] = n.child[tid];
      __syncthreads();
      if (tid == 0) curr[bid] = offset[bid];
      __syncthreads();
      cur = curr[bid];
    }
    if (tid == 0) ans[qi] = cur;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  // a full tree: level l holds 256^l nodes, node p of level l covers [p * span, (p + 1) * span)
  std::vector<Node> nodes;
  std::vector<int> base(kHeight + 1, 0);
  long long width = 1, span = 1;
  for (int l = 0; l < kHeight; ++l) span *= kOrder;
  for (int l = 0; l < kHeight; ++l, width *= kOrder, span /= kOrder) {
    base[l] = int(nodes.size());
    base[l + 1] = base[l] + int(width);
    for (long long p = 0; p < width; ++p) {
      Node n;
      const long long step = span / kOrder;
      for (int t = 0; t <= kOrder; ++t) {
        n.keys[t] = int(p * span + t * step);
        n.child[t] = l + 1 < kHeight ? int(base[l] + width + p * kOrder + t) : int(p * span + t * step);
      }
      nodes.push_back(n);
    }
  }
  const int nkeys = int(nodes.back().keys[kOrder]);
  const int nblocks = 132 * 8, nq = nblocks * kPerBlock;
  std::vector<int> q(nq);
  gpa::Lcg rng(41);
  for (auto& v : q) v = int(rng.next() % unsigned(nkeys));
  Node* dnodes = gpa::to_device(nodes);
  int* dq = gpa::to_device(q);
  int* dcurr = gpa::device_alloc<int>(nblocks);
  int* doff = gpa::device_alloc<int>(nblocks);
  int* dans = gpa::device_alloc<int>(nq);
  auto launch = [&] { find_k<<<nblocks, kOrder>>>(dnodes, dq, dcurr, doff, dans); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<int> got = gpa::to_host(dans, nq);
  gpa::check_close(got, [&](size_t i) { return double(q[i]); }, nq, 0.0, 0.0, "records found");

  gpa::time_kernel("find_k", opt, launch);
  return 0;
}
