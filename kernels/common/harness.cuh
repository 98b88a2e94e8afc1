// Shared harness helpers for the cases in kernels/<case>/: argument parsing,
// error checks, result checks against a CPU reference, and CUDA-event timing
// that prints one `GPA_TIMING {json}` line (read by benchmarks/accuracy).
//
// Each case's .cu keeps its kernel(s) and its own main(); only this plumbing
// is shared so that every harness times and reports the same way.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_CHECK(call)                                                        \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,     \
                   __LINE__, cudaGetErrorString(err_));                         \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

namespace gpa {

struct Options {
  int runs = 20;      // timed runs
  int warmups = 3;
  bool quick = false; // one warm-up + one run: for profiling under a collector
};

inline Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      o.quick = true;
      o.runs = 1;
      o.warmups = 1;
    } else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      o.runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--quick]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// Fixed-seed generator so inputs are the same in every run and variant.
struct Lcg {
  unsigned long long s;
  explicit Lcg(unsigned long long seed) : s(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  unsigned next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return unsigned(s >> 33);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (next() & 0xFFFFFF) / float(0x1000000); }
};

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "CHECK FAILED: %s\n", what);
  std::exit(1);
}

// Compare got[i] with ref(i) on every `step`-th element (step 1 = all).
template <typename T, typename Ref>
void check_close(const std::vector<T>& got, Ref ref, size_t n, double rtol, double atol,
                 const char* what, size_t step = 1) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i += step) {
    double want = ref(i);
    double have = double(got[i]);
    if (!(std::fabs(have - want) <= atol + rtol * std::fabs(want))) {
      if (bad < 5)
        std::fprintf(stderr, "%s: mismatch at %zu: got %.7g want %.7g\n", what, i, have, want);
      ++bad;
    }
  }
  if (bad) {
    std::fprintf(stderr, "%s: %zu mismatches\n", what, bad);
    fail(what);
  }
  std::printf("check %s: ok\n", what);
}

// Times `launch` (which enqueues the kernel once) with CUDA events and prints
// GPA_TIMING {"kernel": name, "median_ms": x, "runs": n}.
template <typename Launch>
double time_kernel(const char* name, const Options& o, Launch launch) {
  for (int i = 0; i < o.warmups; ++i) launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms(o.runs);
  for (int i = 0; i < o.runs; ++i) {
    CUDA_CHECK(cudaEventRecord(a));
    launch();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&ms[i], a, b));
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  double med = (o.runs % 2) ? ms[o.runs / 2] : 0.5 * (ms[o.runs / 2 - 1] + ms[o.runs / 2]);
  std::printf("GPA_TIMING {\"kernel\": \"%s\", \"median_ms\": %.6f, \"runs\": %d, \"min_ms\": %.6f, \"max_ms\": %.6f}\n",
              name, med, o.runs, double(ms.front()), double(ms.back()));
  std::fflush(stdout);
  return med;
}

template <typename T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
T* device_alloc(size_t n) {
  T* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, n * sizeof(T)));
  CUDA_CHECK(cudaMemset(d, 0, n * sizeof(T)));
  return d;
}

template <typename T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace gpa
