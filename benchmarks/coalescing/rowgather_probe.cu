// What DRAM share gathered rows reach once coalesced: a warp per row, rows picked at random.
//
// A row gather (`row = feat + id * F; for f: acc[f] += row[f]`, gathers.row_gathers) coalesced is
// a warp (or part of one) reading a whole row of R bytes at a random place in a table much larger
// than the L2. Each row is R / 128 lines in a row of DRAM pages, but the next row is anywhere:
// does such a stream reach the 93-94% of DRAM's peak a sequential stream does, or, like the
// fieldgather probe's 16-byte records (61-67%), less, and how does it grow with R?
//
//   gather_rR   each output sums K = 16 rows of R bytes (R / 4 floats) picked at random from a
//               1 GiB table (ids read coalesced from an index array), a warp per output for
//               R >= 128 (R / 128 lines per row), half a warp for R = 64; the K-loop's trip count
//               is a run-time argument (nvcc unrolls it as it would a kernel's); the output row is
//               stored coalesced (a sixteenth of the bytes read). About 512 MiB read per launch.
//
// R = 64, 128, 256, 512, 1024 at 16, 32 and 64 warps per SM (blocks of 256, resident blocks set by
// dynamic shared memory the kernel does not use). Run under ncu by record_probe.sh rowgather (time,
// DRAM share of peak and bytes); table_probe.py rowgather adds the rows to
// gpa_lsp/data/coalescing.json ("rowgather"), read by gpa_lsp/analysis/gathers.py.
//
//   rowgather_probe           runs every configuration once (for ncu)
//   rowgather_probe --time    median of 5 timed runs of each configuration
//   rowgather_probe --list    one line per configuration, in launch order
#include "probe_timing.cuh"
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

constexpr long TABLE_FLOATS = 1L << 28;    // 1 GiB
constexpr int K = 16;                      // rows per output
constexpr long READ_BYTES = 1L << 29;      // per launch

template <int R>
__global__ void __launch_bounds__(256) gather(const float* table, const int* idx, float* out, int k, long outputs) {
  constexpr int F = R / 4;                          // floats per row
  constexpr int ROWS_PER_WARP = R >= 128 ? 1 : 128 / R;
  constexpr int LANES = 32 / ROWS_PER_WARP;         // lanes per row
  constexpr int PER = F / LANES;                    // floats per lane
  const long warp = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const long o = warp * ROWS_PER_WARP + lane / LANES;
  const int l = lane % LANES;
  if (o >= outputs) return;
  float acc[PER];
#pragma unroll
  for (int j = 0; j < PER; ++j) acc[j] = 0.f;
  for (int i = 0; i < k; ++i) {
    const float* row = table + long(idx[o * k + i]) * F;
#pragma unroll
    for (int j = 0; j < PER; ++j) acc[j] += row[j * LANES + l];
  }
#pragma unroll
  for (int j = 0; j < PER; ++j) out[o * F + j * LANES + l] = acc[j];
}

using Kern = void (*)(const float*, const int*, float*, int, long);
struct Mode {
  int r;
  Kern k;
};
static const Mode kModes[] = {{64, gather<64>}, {128, gather<128>}, {256, gather<256>}, {512, gather<512>},
                              {1024, gather<1024>}};
static const int kBlocksPerSm[] = {2, 4, 8};   // x 8 warps: 16, 32, 64 warps per SM

int main(int argc, char** argv) {
  const bool list = argc > 1 && !std::strcmp(argv[1], "--list");
  const bool timed = argc > 1 && !std::strcmp(argv[1], "--time");
  int smem_sm = 228 * 1024;
  float *table = nullptr, *out = nullptr;
  int* idx = nullptr;
  const long most_outputs = READ_BYTES / (K * 64L);
  if (!list) {
    CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CHECK(cudaMalloc(&table, TABLE_FLOATS * sizeof(float)));
    CHECK(cudaMemset(table, 0, TABLE_FLOATS * sizeof(float)));
    CHECK(cudaMalloc(&out, READ_BYTES / K));
    CHECK(cudaMalloc(&idx, most_outputs * K * sizeof(int)));
  }
  cudaEvent_t a, b;
  if (timed) { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  for (const Mode& md : kModes) {
    const long rows = TABLE_FLOATS / (md.r / 4);
    const long outputs = READ_BYTES / (long(K) * md.r);
    if (!list) {
      // random rows: a 64-bit LCG, its high bits modulo the table's rows
      std::vector<int> h(outputs * K);
      uint64_t s = 12345u + md.r;
      for (auto& v : h) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = int((s >> 33) % uint64_t(rows)); }
      CHECK(cudaMemcpy(idx, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
    }
    const int rows_per_warp = md.r >= 128 ? 1 : 128 / md.r;
    const long threads = (outputs + rows_per_warp - 1) / rows_per_warp * 32;
    const unsigned grid = unsigned((threads + 255) / 256);
    for (int bps : kBlocksPerSm) {
      const int warps = bps * 8;
      if (list) {
        std::printf("gather_r%d warps_per_sm=%d\n", md.r, warps);
        continue;
      }
      const int smem = bps >= 8 ? 0 : (smem_sm / (bps + 1)) + 1024;
      CHECK(cudaFuncSetAttribute(md.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto go = [&] { md.k<<<grid, 256, smem>>>(table, idx, out, K, outputs); };
      float median = 0.f;
      CHECK(run_or_time(go, timed, a, b, &median));
      if (timed) std::printf("gather_r%d warps_per_sm=%d median_ms=%.5f\n", md.r, warps, median);
    }
  }
  if (!list) CHECK(cudaDeviceSynchronize());
  return 0;
}
