// What every coalescing probe shares: the CHECK macro (errors end main with status 2) and the
// timing of one configuration (a warm-up launch, then the median of five timed by CUDA events).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                               \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "CUDA error %s: %s\n", #call, cudaGetErrorString(e_)); \
      return 2;                                                                   \
    }                                                                             \
  } while (0)

// Runs `go` (which enqueues the kernel once) for a warm-up, then five times between the events
// `a` and `b`; writes the median of the five (ms) to `median`. Returns the first CUDA error.
template <typename F>
cudaError_t median_ms(F&& go, cudaEvent_t a, cudaEvent_t b, float* median) {
  go();
  std::vector<float> ms;
  for (int r = 0; r < 5; ++r) {
    cudaError_t e = cudaEventRecord(a);
    if (e == cudaSuccess) { go(); e = cudaEventRecord(b); }
    if (e == cudaSuccess) e = cudaEventSynchronize(b);
    float v = 0.f;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&v, a, b);
    if (e != cudaSuccess) return e;
    ms.push_back(v);
  }
  std::sort(ms.begin(), ms.end());
  *median = ms[2];
  return cudaSuccess;
}

// One configuration of a probe: run once (for ncu) or, with `timed`, timed as median_ms does
// (`median` set). Returns the first CUDA error.
template <typename F>
cudaError_t run_or_time(F&& go, bool timed, cudaEvent_t a, cudaEvent_t b, float* median) {
  if (!timed) {
    go();
    return cudaGetLastError();
  }
  return median_ms(go, a, b, median);
}
