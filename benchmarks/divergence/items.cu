// What converging a divergent loop buys when each item's loop is short: a thread per item walking
// its own list (the lanes of a warp run different trip counts) against a warp per item (the lanes
// stride over the item's list, a shuffle sum at the end). Every entry is an index load and a
// dependent gather from 16 MiB, as in a CSR graph or sparse row.
//
// Degree distributions (items = 2^18, 256 threads a block; the thread kernel runs 8192 warps):
//   uD     every item has D entries (D = 1..64): no divergence in the thread kernel; the warp
//          kernel runs ceil(D / 32) iterations per item with min(D, 32) lanes
//   mixD   D uniform in 1..2D-1 (mean D): the thread kernel waits for its warp's longest item
//   hubD   1 item in 64 has 32 x D entries, the others 1..D (a warp's longest list is a hub's)
// For each: the warp iterations each kernel runs (thread: sum over warps of the longest item;
// warp: sum of ceil(d / 32)), the lane iterations (sum of d), and the time (median of 9, cudaEvent).
// The question for gpa's Warp Divergence model (docs/optimizers.md): does the warp kernel's time
// follow sum ceil(d / 32) -- at least one warp iteration per item, lanes idle below 32 entries --
// or the lane iterations / 32?
//
//   items            prints one JSON line per configuration
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                               \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "CUDA error %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

constexpr int kItems = 1 << 18;
constexpr int kBlock = 256;
constexpr int kData = 4 << 20;  // 16 MiB of floats gathered

__global__ void thread_per_item(const int* row, const int* idx, const float* data, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kItems) return;
  float s = 0.f;
  const int end = row[i + 1];
  for (int e = row[i]; e < end; ++e) s += data[idx[e]];
  out[i] = s;
}

__global__ void warp_per_item(const int* row, const int* idx, const float* data, float* out) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= kItems) return;
  float s = 0.f;
  const int end = row[i + 1];
  for (int e = row[i] + lane; e < end; e += 32) s += data[idx[e]];
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[i] = s;
}

static unsigned rng_state = 12345u;
static unsigned rnd() { return rng_state = rng_state * 1664525u + 1013904223u; }

template <class K>
static float time_ms(K launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int r = 0; r < 9; ++r) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

int main() {
  float* data = nullptr;
  float* out = nullptr;
  CHECK(cudaMalloc(&data, kData * sizeof(float)));
  CHECK(cudaMemset(data, 0, kData * sizeof(float)));
  CHECK(cudaMalloc(&out, kItems * sizeof(float)));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  struct Cfg { std::string kind; int d; };
  std::vector<Cfg> cfgs;
  for (int d : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64}) cfgs.push_back({"u", d});
  for (int d : {2, 4, 8, 16, 32}) cfgs.push_back({"mix", d});
  for (int d : {4, 8, 16}) cfgs.push_back({"hub", d});
  for (const Cfg& c : cfgs) {
    std::vector<int> deg(kItems);
    for (int i = 0; i < kItems; ++i) {
      if (c.kind == "u") deg[i] = c.d;
      else if (c.kind == "mix") deg[i] = 1 + int((rnd() >> 8) % unsigned(2 * c.d - 1));
      else deg[i] = ((rnd() >> 8) % 64 == 0) ? 32 * c.d : 1 + int((rnd() >> 8) % unsigned(c.d));
    }
    std::vector<int> row(kItems + 1, 0);
    for (int i = 0; i < kItems; ++i) row[i + 1] = row[i] + deg[i];
    const long entries = row[kItems];
    std::vector<int> idx(entries);
    for (auto& v : idx) v = int((rnd() >> 4) % unsigned(kData));
    long warp_iters_thread = 0, warp_iters_warp = 0, lane_iters = entries;
    for (int w = 0; w < kItems / 32; ++w) {
      int m = 0;
      for (int l = 0; l < 32; ++l) m = std::max(m, deg[w * 32 + l]);
      warp_iters_thread += m;
    }
    for (int i = 0; i < kItems; ++i) warp_iters_warp += (deg[i] + 31) / 32;
    int *drow = nullptr, *didx = nullptr;
    CHECK(cudaMalloc(&drow, row.size() * sizeof(int)));
    CHECK(cudaMalloc(&didx, idx.size() * sizeof(int)));
    CHECK(cudaMemcpy(drow, row.data(), row.size() * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(didx, idx.data(), idx.size() * sizeof(int), cudaMemcpyHostToDevice));
    const float t_thread = time_ms([&] {
      thread_per_item<<<(kItems + kBlock - 1) / kBlock, kBlock>>>(drow, didx, data, out);
    });
    const float t_warp = time_ms([&] {
      warp_per_item<<<(kItems * 32L + kBlock - 1) / kBlock, kBlock>>>(drow, didx, data, out);
    });
    CHECK(cudaGetLastError());
    std::printf("{\"device\": \"%s\", \"dist\": \"%s\", \"d\": %d, \"items\": %d, \"lane_iters\": %ld, "
                "\"warp_iters_thread\": %ld, \"warp_iters_warp\": %ld, \"thread_ms\": %.5f, \"warp_ms\": %.5f}\n",
                prop.name, c.kind.c_str(), c.d, kItems, lane_iters, warp_iters_thread, warp_iters_warp,
                t_thread, t_warp);
    std::fflush(stdout);
    CHECK(cudaFree(drow));
    CHECK(cudaFree(didx));
  }
  return 0;
}
