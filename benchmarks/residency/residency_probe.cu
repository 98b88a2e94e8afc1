// L2 residency probe (issue 15): how fast a kernel reads a footprint of F bytes that it
// read before, launched again over the same data as a timing harness does, and from
// which footprint on the reads come from DRAM again. Hopper's L2 (50 MB on the H100 and
// the H200) keeps what the previous launch read; the coalescing model's DRAM roof is a
// roof only for the footprints it does not keep. benchmarks/residency/README.md.
//
// Kernels: `stream_read` reads F bytes as float4 through the L2 only (__ldcg: no L1 reuse
// between passes), four independent loads in flight per thread, sums them and writes one
// float per block; `stream_copy` reads F/2 and writes F/2 (the output's dirty lines
// compete for the same L2). Modes:
//   passes    one launch reads the footprint PASSES times (grid-stride, each pass starting
//             at another block's slice): the steady state without launch gaps
//   launches  one pass per launch, LAUNCHES launches back to back between one event pair
//             (what a harness's timing loop does, launch gaps included)
//   cold      one pass after a kernel wrote a 512 MB scratch buffer (the L2 evicted), an
//             event pair around the launch alone: the footprint from DRAM
// With --single: only SINGLE launches of one pass per footprint, back to back, no timing of its
// own: run under `ncu --cache-control none --metrics gpu__time_duration.sum` (record.sh), each
// launch's own duration with what the previous launch left in the L2 (the kernel's fixed ramp
// and tail beside its bytes).
// Output: one JSON line per (kind, mode, footprint), then one line of device properties.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void stream_read(const float4* __restrict__ in, size_t n4, int passes, float* out) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (int p = 0; p < passes; ++p) {
    // each pass starts at another block's slice so a block never rereads what it just read
    const size_t start = (size_t(blockIdx.x + p * 37) % gridDim.x) * blockDim.x + threadIdx.x;
    size_t i = start;
    for (; i + 3 * threads < n4 + 0; i += 4 * threads) {
      const float4 a = __ldcg(in + i), b = __ldcg(in + i + threads);
      const float4 c = __ldcg(in + i + 2 * threads), d = __ldcg(in + i + 3 * threads);
      acc += (a.x + b.y) + (c.z + d.w);
    }
    for (; i < n4; i += threads) acc += __ldcg(in + i).x;
  }
  if (acc == 1234.5f) out[blockIdx.x] = acc;   // never true; keeps the loads
}

__global__ void stream_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += threads)
    __stcg(out + i, __ldcg(in + i));
}

__global__ void scribble(float4* s, size_t n4, float v) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += threads)
    s[i] = make_float4(v, v, v, v);
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const bool single = argc > 1 && std::string(argv[1]) == "--single";
  int dev = 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  const int block = 256, grid = sms * 8;
  const size_t max_mb = 512, scratch_mb = 512;
  float4 *buf, *scratch;
  float* sink;
  CK(cudaMalloc(&buf, max_mb << 20));
  CK(cudaMalloc(&scratch, scratch_mb << 20));
  CK(cudaMalloc(&sink, grid * sizeof(float)));
  CK(cudaMemset(buf, 0, max_mb << 20));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int PASSES = 8, LAUNCHES = 20, REPS = 7;
  const int sizes[] = {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 64, 80, 96, 128, 256, 512};
  if (single) {
    const int SINGLE = 6;                          // the first 3 warm the L2, the last 3 are read
    for (int mb : sizes) {
      const size_t n4 = (size_t(mb) << 20) / 16;
      for (int l = 0; l < SINGLE; ++l) stream_read<<<grid, block>>>(buf, n4, 1, sink);
      CK(cudaDeviceSynchronize());
      std::printf("{\"kind\": \"read\", \"mode\": \"single\", \"footprint_mb\": %d, \"launches\": %d}\n", mb, SINGLE);
    }
    return 0;
  }
  for (int kind = 0; kind < 2; ++kind) {
    for (int mb : sizes) {
      const size_t bytes = size_t(mb) << 20;
      if (kind == 1 && bytes > (max_mb << 20)) continue;
      const size_t n4 = bytes / 16;
      const size_t half = n4 / 2;
      auto run = [&](int passes) {
        if (kind == 0) stream_read<<<grid, block>>>(buf, n4, passes, sink);
        else for (int p = 0; p < passes; ++p) stream_copy<<<grid, block>>>(buf, buf + half, half);
      };
      for (int mode = 0; mode < 3; ++mode) {
        if (kind == 1 && mode == 0) continue;     // copy: launches and cold only
        std::vector<float> ms;
        for (int r = 0; r < REPS; ++r) {
          float t = 0.f;
          if (mode == 0) {                         // passes
            run(1);
            CK(cudaEventRecord(a));
            if (kind == 0) stream_read<<<grid, block>>>(buf, n4, PASSES, sink);
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaEventElapsedTime(&t, a, b));
            t /= PASSES;
          } else if (mode == 1) {                  // launches
            run(1);
            run(1);
            CK(cudaEventRecord(a));
            for (int l = 0; l < LAUNCHES; ++l) run(1);
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaEventElapsedTime(&t, a, b));
            t /= LAUNCHES;
          } else {                                 // cold
            scribble<<<grid, block>>>(scratch, (scratch_mb << 20) / 16, float(r));
            CK(cudaEventRecord(a));
            run(1);
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaEventElapsedTime(&t, a, b));
          }
          ms.push_back(t);
        }
        CK(cudaGetLastError());
        const float m = median(ms);
        const double moved = double(bytes);       // read: F; copy: F/2 read + F/2 written
        std::printf("{\"kind\": \"%s\", \"mode\": \"%s\", \"footprint_mb\": %d, \"ms\": %.6f, \"gbps\": %.1f}\n",
                    kind == 0 ? "read" : "copy", mode == 0 ? "passes" : mode == 1 ? "launches" : "cold",
                    mb, m, moved / (m * 1e-3) / 1e9);
        std::fflush(stdout);
      }
    }
  }
  int l2 = prop.l2CacheSize, persist = prop.persistingL2CacheMaxSize;
  int mem_khz = 0, bus = 0;
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev);
  std::printf("{\"device\": \"%s\", \"sm_count\": %d, \"l2_bytes\": %d, \"persisting_l2_max_bytes\": %d, "
              "\"memory_clock_khz\": %d, \"bus_width_bits\": %d, \"grid\": %d, \"block\": %d, \"passes\": %d, "
              "\"launches\": %d, \"reps\": %d}\n",
              prop.name, sms, l2, persist, mem_khz, bus, grid, block, PASSES, LAUNCHES, REPS);
  return 0;
}
