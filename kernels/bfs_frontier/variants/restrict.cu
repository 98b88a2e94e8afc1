// One level of top-down breadth-first search on a CSR graph with skewed
// degrees (1% of the vertices have 256-2047 neighbours, the others 1-15). One
// thread per frontier vertex walks its adjacency list, claims each unvisited
// neighbour with atomicCAS on its level and appends it to the next frontier
// through one atomic counter. A warp runs as long as its highest-degree vertex:
// the neighbour loop diverges (most lanes are done while one lane walks a list
// of a thousand edges, one dependent gather at a time), and the lanes' col[e]
// loads each touch a different cache line.
//
// Variant restrict: const __restrict__ on the read-only row, col and frontier.
#include "../../common/harness.cuh"

__global__ void bfs_level(const int* __restrict__ row, const int* __restrict__ col,
                          const int* __restrict__ frontier, int nf, int* level,
                          int depth, int* next, int* next_count) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nf) return;
  const int v = frontier[t];
  const int end = row[v + 1];
  for (int e = row[v]; e < end; ++e) {
    const int u = col[e];
    if (level[u] < 0 && atomicCAS(&level[u], -1, depth + 1) == -1)
      next[atomicAdd(next_count, 1)] = u;
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 20, depth = 3;
  gpa::Lcg rng(29);
  std::vector<int> row(n + 1, 0);
  for (int v = 0; v < n; ++v) {
    const bool hub = rng.next() % 100 == 0;
    const int deg = hub ? 256 + int(rng.next() % 1792) : 1 + int(rng.next() % 15);
    row[v + 1] = row[v] + deg;
  }
  std::vector<int> col(row[n]);
  for (auto& u : col) u = int(rng.next() % n);
  // a quarter of the vertices form the frontier (level depth), 60% of the others
  // were reached earlier, the rest are unvisited (-1)
  std::vector<int> level0(n), frontier;
  for (int v = 0; v < n; ++v) {
    const unsigned r = rng.next() % 100;
    if (r < 25) {
      level0[v] = depth;
      frontier.push_back(v);
    } else {
      level0[v] = r < 70 ? int(r % depth) : -1;
    }
  }
  const int nf = int(frontier.size());
  int* drow = gpa::to_device(row);
  int* dcol = gpa::to_device(col);
  int* dfrontier = gpa::to_device(frontier);
  int* dlevel0 = gpa::to_device(level0);  // the levels before this step: never written
  int* dlevel = gpa::device_alloc<int>(n);
  int* dnext = gpa::device_alloc<int>(n);
  int* dcount = gpa::device_alloc<int>(1);
  const int block = 256, grid = (nf + block - 1) / block;
  // The step marks the vertices it reaches, so every launch first restores the
  // levels (a 4 MB device-to-device copy) and zeroes the counter, both timed with
  // it: each timed run discovers the same vertices.
  auto launch = [&] {
    CUDA_CHECK(cudaMemcpyAsync(dlevel, dlevel0, size_t(n) * sizeof(int), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemsetAsync(dcount, 0, sizeof(int)));
    bfs_level<<<grid, block>>>(drow, dcol, dfrontier, nf, dlevel, depth, dnext, dcount);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<int> level(level0), want;
  for (int v : frontier)
    for (int e = row[v]; e < row[v + 1]; ++e)
      if (level[col[e]] < 0) {
        level[col[e]] = depth + 1;
        want.push_back(col[e]);
      }
  std::vector<int> got_level = gpa::to_host(dlevel, n);
  gpa::check_close(got_level, [&](size_t i) { return double(level[i]); }, got_level.size(), 0.0, 0.0, "levels");
  const int count = gpa::to_host(dcount, 1)[0];
  std::printf("next frontier: %d vertices (%zu expected) from %d\n", count, want.size(), nf);
  if (count != int(want.size())) gpa::fail("next frontier size");
  std::vector<int> got = gpa::to_host(dnext, count);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  gpa::check_close(got, [&](size_t i) { return double(want[i]); }, got.size(), 0.0, 0.0, "next frontier (sorted)");

  gpa::time_kernel("bfs_level", opt, launch);
  return 0;
}
