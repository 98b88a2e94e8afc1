// What a shared-memory bank conflict costs on this GPU, counted from the addresses: the step of a
// tree in shared memory (a scan's or a reduction's), ``if (tid < A) buf[b] += buf[a]`` with
// a = S (2 tid + 1) - 1, b = S (2 tid + 2) - 1 and a barrier after it, repeated. The lanes of a
// warp are 2S words apart: min(2S, 32)-way conflicts on both loads and the store while a warp has
// 32 active lanes; A active threads of the block's 512 leave whole warps predicated off (the
// tree's upper levels). Padded ("pad"): every index i becomes i + i / 32, the usual fix.
//
// For each (S, A, pad): the wavefronts a block's warps need per step, counted here from the
// addresses (per warp: the most distinct words any bank serves; a warp with no active lane
// counted 0), and the time per step (median of 9, cudaEvent). record.sh also takes ncu's
// shared-memory wavefront and instruction counters and the source page's per-instruction
// "L1 Conflicts Shared N-Way" of some configurations: what the counter means when warps are
// predicated off.
//
//   banks            prints one JSON line per configuration
//   banks --one S A PAD   runs one configuration once (for ncu)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                               \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "CUDA error %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

constexpr int kThreads = 512;
constexpr int kWords = 2048;  // the tree's array (a 1024-element scan's buf, twice)
constexpr int kMask = kWords - 1;
constexpr int kSteps = 256;

__device__ __forceinline__ int at(int i, int pad) { return pad ? i + (i >> 5) : i; }

__global__ void __launch_bounds__(kThreads) tree_step(float* out, int s, int active, int pad) {
  __shared__ float buf[kWords + kWords / 32];
  const int tid = threadIdx.x;
  for (int i = tid; i < kWords + kWords / 32; i += kThreads) buf[i] = float(i);
  __syncthreads();
  const int a = at((s * (2 * tid + 1) - 1) & kMask, pad), b = at((s * (2 * tid + 2) - 1) & kMask, pad);
  for (int r = 0; r < kSteps; ++r) {
    if (tid < active) buf[b] += buf[a];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = buf[at(kWords - 1, pad)];
}

// wavefronts of one warp's 32-bit access to words w[l] of its active lanes
static int wavefronts(const std::vector<int>& words) {
  if (words.empty()) return 0;
  int most = 0;
  for (int bank = 0; bank < 32; ++bank) {
    std::vector<int> distinct;
    for (int w : words)
      if (w % 32 == bank && std::find(distinct.begin(), distinct.end(), w) == distinct.end()) distinct.push_back(w);
    most = std::max(most, int(distinct.size()));
  }
  return most;
}

static void counted(int s, int active, int pad, long* waves, long* ideal, int* warps_on) {
  *waves = *ideal = 0;
  *warps_on = 0;
  for (int w = 0; w < kThreads / 32; ++w) {
    std::vector<int> wa;
    for (int l = 0; l < 32; ++l) {
      const int t = w * 32 + l;
      if (t < active) {
        const int a = (s * (2 * t + 1) - 1) & kMask;
        wa.push_back(pad ? a + (a >> 5) : a);
      }
    }
    *waves += wavefronts(wa);
    *ideal += wa.empty() ? 0 : 1;
    *warps_on += wa.empty() ? 0 : 1;
  }
}

int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 4;  // 4 blocks of 16 warps per SM: 64 warps, the SM's limit
  float* out = nullptr;
  CHECK(cudaMalloc(&out, blocks * sizeof(float)));
  if (argc == 5 && !std::strcmp(argv[1], "--one")) {
    tree_step<<<blocks, kThreads>>>(out, std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
    CHECK(cudaDeviceSynchronize());
    return 0;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int pad = 0; pad <= 1; ++pad)
    for (int s : {1, 2, 4, 8, 16})
      for (int active : {512, 256, 128, 64, 32, 16, 8, 0}) {
        std::vector<float> t;
        for (int r = 0; r < 10; ++r) {
          CHECK(cudaEventRecord(e0));
          tree_step<<<blocks, kThreads>>>(out, s, active, pad);
          CHECK(cudaEventRecord(e1));
          CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          if (r) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        long waves = 0, ideal = 0;
        int on = 0;
        counted(s, active, pad, &waves, &ideal, &on);
        std::printf("{\"device\": \"%s\", \"s\": %d, \"active\": %d, \"pad\": %d, \"warps_on\": %d, "
                    "\"wavefronts\": %ld, \"ideal\": %ld, \"steps\": %d, \"blocks\": %d, \"ms\": %.5f}\n",
                    prop.name, s, active, pad, on, waves, ideal, kSteps, blocks, t[t.size() / 2]);
        std::fflush(stdout);
      }
  return 0;
}
