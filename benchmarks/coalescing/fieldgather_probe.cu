// What merging gathers that share an index saves, unit by unit: each of 2^22
// threads reads a random index (coalesced), gathers k 4-byte fields of that
// index and writes one float (coalesced). The k fields live either in k
// separate arrays (soa: k gather instructions, each its own sector) or side by
// side in one record (aos: one 8- or 16-byte gather, one sector), in a table
// of 2^24 records (DRAM: more than the L2 holds) or 2^16 (L2-resident).
// Run under ncu by record_probe.sh fieldgather (time, sectors per request, L2
// sectors, DRAM bytes, L1/L2/DRAM share of peak); table_fieldgather.py adds
// the rows to gpa_lsp/data/coalescing.json ("fieldgather").
//
//   fieldgather_probe           runs every configuration once (for ncu)
//   fieldgather_probe --time    median of 5 timed runs of each configuration
//   fieldgather_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>


constexpr int N = 1 << 22;
constexpr int BIG = 1 << 24, SMALL = 1 << 16;

__global__ void fill_index(int* idx, int cells) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
    unsigned v = unsigned(i) * 2654435761u;
    v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
    idx[i] = int(v % unsigned(cells));
  }
}

// k separate arrays: a[j][c]
template <int K>
__global__ void __launch_bounds__(256) soa(const int* idx, const float* a0, const float* a1, const float* a2,
                                           const float* a3, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const int c = idx[i];
  float s = a0[c];
  if (K > 1) s += a1[c];
  if (K > 2) s += a2[c];
  if (K > 3) s += a3[c];
  out[i] = s;
}

__global__ void __launch_bounds__(256) aos2(const int* idx, const float2* rec, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float2 r = rec[idx[i]];
  out[i] = r.x + r.y;
}

__global__ void __launch_bounds__(256) aos4(const int* idx, const float4* rec, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float4 r = rec[idx[i]];
  out[i] = r.x + r.y + r.z + r.w;
}

static const char* kModes[] = {"soa1", "soa2", "soa3", "soa4", "aos2", "aos4"};

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int *idx_big = nullptr, *idx_small = nullptr;
  float *a[4] = {}, *out = nullptr;
  float4* rec = nullptr;
  if (!list) {
    CHECK(cudaMalloc(&idx_big, N * sizeof(int)));
    CHECK(cudaMalloc(&idx_small, N * sizeof(int)));
    for (auto& p : a) {
      CHECK(cudaMalloc(&p, long(BIG) * sizeof(float)));
      CHECK(cudaMemset(p, 0, long(BIG) * sizeof(float)));
    }
    CHECK(cudaMalloc(&rec, long(BIG) * sizeof(float4)));
    CHECK(cudaMemset(rec, 0, long(BIG) * sizeof(float4)));
    CHECK(cudaMalloc(&out, N * sizeof(float)));
    fill_index<<<1024, 256>>>(idx_big, BIG);
    fill_index<<<1024, 256>>>(idx_small, SMALL);
    CHECK(cudaDeviceSynchronize());
  }
  cudaEvent_t e0, e1;
  if (timed) { CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1)); }
  const int block = 256, grid = N / block;
  for (int foot = 0; foot < 2; ++foot) {
    const int* idx = foot == 0 ? idx_big : idx_small;
    for (int m = 0; m < 6; ++m) {
      if (list) {
        std::printf("%s foot=%s\n", kModes[m], foot == 0 ? "dram" : "l2");
        continue;
      }
      auto go = [&] {
        switch (m) {
          case 0: soa<1><<<grid, block>>>(idx, a[0], a[1], a[2], a[3], out); break;
          case 1: soa<2><<<grid, block>>>(idx, a[0], a[1], a[2], a[3], out); break;
          case 2: soa<3><<<grid, block>>>(idx, a[0], a[1], a[2], a[3], out); break;
          case 3: soa<4><<<grid, block>>>(idx, a[0], a[1], a[2], a[3], out); break;
          case 4: aos2<<<grid, block>>>(idx, reinterpret_cast<const float2*>(rec), out); break;
          default: aos4<<<grid, block>>>(idx, rec, out); break;
        }
      };
      if (!timed) {
        go();
        CHECK(cudaGetLastError());
        continue;
      }
      float median = 0.f;
      CHECK(median_ms(go, e0, e1, &median));
      std::printf("%s foot=%s median_ms=%.5f\n", kModes[m], foot == 0 ? "dram" : "l2", median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
